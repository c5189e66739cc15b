"""Integrations with other libraries (each in its own module, importing its library lazily)."""
