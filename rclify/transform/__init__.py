"""The transform: lock..unlock regions extracted into functions, the lock API rewritten.

The modules, in the order data flows, are listed in pipeline.py.  This package's __init__ imports
nothing: semantic patches import rclify.lock_identity (the lock table) inside spatch's own Python,
which has neither libclang nor jinja2, and the modules it imports from here (discover, includes,
init_aliases) must load there too.
"""
