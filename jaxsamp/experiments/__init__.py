"""Config schema, registries, the experiment runner and its plots."""
