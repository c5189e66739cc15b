"""The operator calls' request and response messages (see :mod:`spindle.api.operatorservice.v1`)."""
