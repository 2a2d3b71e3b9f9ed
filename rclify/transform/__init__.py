"""The transform: lock..unlock regions extracted into functions, the lock API rewritten.

The modules, in the order data flows, are listed in pipeline.py.  This package's __init__ imports
nothing: semantic patches import rclify.transform.lock_table inside spatch's own Python, which
has neither libclang nor jinja2.
"""
