"""Nexus operation handlers (Temporal's ``temporalio.nexus``), handler side.

Services and operations are defined with the ``nexusrpc`` package (``@nexusrpc.service``,
``@nexusrpc.handler.service_handler``, ``@nexusrpc.handler.sync_operation``); errors a handler
raises are ``nexusrpc.HandlerError`` and ``nexusrpc.OperationError``. This module gives a handler
its context: :func:`info`, :func:`client`, :data:`logger`, :func:`in_operation`, and the
workflow-run operation token.

Not built yet: the ``workflow_run_operation`` decorator and ``WorkflowRunOperationContext``,
the worker's ``nexus_service_handlers=`` and the caller's ``workflow.create_nexus_client``
(see docs/COMING_FROM_TEMPORAL.md).
"""

from __future__ import annotations

from spindle.nexus._operation_context import Info, client, in_operation, info, logger
from spindle.nexus._operation_token import WorkflowRunOperationToken

__all__ = ["Info", "WorkflowRunOperationToken", "client", "in_operation", "info", "logger"]
