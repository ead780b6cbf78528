"""Checkout tools (not shipped): README's generated tables, the npm pins of the report viewer."""
