"""The service's request and response messages (see :mod:`spindle.api.workflowservice.v1`)."""
