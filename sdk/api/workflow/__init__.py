"""Workflow execution messages (see :mod:`spindle.api.workflow.v1`)."""
