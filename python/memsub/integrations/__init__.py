"""Adapters that let agent frameworks keep their memory in memsub (optional extras, e.g. ``memsub[langgraph]``).

Each adapter is a thin layer over memsub's stored functions and acts for one tenant context, so the database's
row-level security keeps tenants apart. See docs/integrations.md.
"""
