"""Wire enums (see :mod:`spindle.api.enums.v1`)."""
