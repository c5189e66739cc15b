"""The Nexus endpoint messages (see :mod:`spindle.api.nexus.v1`)."""
