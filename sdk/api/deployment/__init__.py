"""Worker deployment messages (see :mod:`spindle.api.deployment.v1`)."""
