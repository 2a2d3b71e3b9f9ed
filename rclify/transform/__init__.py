"""The transform: lock..unlock regions extracted into functions, the lock API rewritten.

The modules, in the order data flows, are listed in pipeline.py.  This package's __init__ imports
nothing: packages below it (rclify.lock_identity, whose lock table semantic patches import inside
spatch's own Python, which has neither libclang nor jinja2; rclify.ctext) import nothing from it.
"""
