"""Common wire messages (see :mod:`spindle.api.common.v1`)."""
