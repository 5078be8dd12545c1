"""Rules: metadata registry (registry.py, specs/) and the static checks."""
