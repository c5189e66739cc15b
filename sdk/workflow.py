"""Workflow-side API: decorators and the functions workflow code calls.

Importing this module also installs the determinism guards (``time.time``,
``random``, ``uuid.uuid4``, ``datetime.now`` raise inside workflow code only).
Names follow ``temporalio.workflow``; Spindle has no import sandbox (see
:class:`unsafe`).
"""

from __future__ import annotations

from spindle._runtime._context import workflow_meter as metric_meter
from spindle._workflow.activity_calls import (
    execute_activity,
    execute_activity_method,
    execute_local_activity,
    execute_local_activity_method,
    start_activity,
    start_activity_method,
    start_local_activity,
    start_local_activity_method,
)
from spindle._workflow.child_calls import (
    ExternalWorkflowHandle,
    execute_child_workflow,
    get_external_workflow_handle,
    start_child_workflow,
)
from spindle._workflow.defn import WorkflowDefinition, defn, init, query, run, signal, update
from spindle._workflow.guard import install as _install_guards
from spindle._workflow.handler_calls import (
    get_query_handler,
    get_signal_handler,
    get_update_handler,
    set_query_handler,
    set_update_handler,
)
from spindle._workflow.history_calls import (
    continue_as_new,
    deprecate_patch,
    get_version,
    patched,
    record_marker,
    side_effect,
    upsert_search_attributes,
)
from spindle._workflow.info import ParentInfo, UpdateInfo, WorkflowInfo, current_update_info
from spindle._workflow.info_calls import in_workflow, info, now, random, uuid4
from spindle._workflow.logger import LoggerAdapter, logger
from spindle._workflow.run import ContinueAsNewError
from spindle._workflow.runtime import DEFAULT_VERSION
from spindle._workflow.statemachines.activity import ActivityCancellationType, ActivityHandle
from spindle._workflow.statemachines.child_workflow import ChildWorkflowHandle
from spindle._workflow.unsafe import unsafe
from spindle._workflow.wait_calls import (
    all_handlers_finished,
    set_signal_handler,
    sleep,
    wait_condition,
    wait_for_signal,
)
from spindle._workflow.waiting import as_completed, wait
from spindle.common._retry_policy import RetryPolicy

__all__ = [
    "ActivityCancellationType",
    "ActivityHandle",
    "ChildWorkflowHandle",
    "ContinueAsNewError",
    "DEFAULT_VERSION",
    "ExternalWorkflowHandle",
    "LoggerAdapter",
    "ParentInfo",
    "RetryPolicy",
    "UpdateInfo",
    "WorkflowDefinition",
    "WorkflowInfo",
    "all_handlers_finished",
    "as_completed",
    "continue_as_new",
    "current_update_info",
    "defn",
    "deprecate_patch",
    "execute_activity",
    "execute_activity_method",
    "execute_child_workflow",
    "execute_local_activity",
    "execute_local_activity_method",
    "get_external_workflow_handle",
    "get_query_handler",
    "get_signal_handler",
    "get_update_handler",
    "get_version",
    "in_workflow",
    "info",
    "init",
    "logger",
    "now",
    "patched",
    "record_marker",
    "query",
    "random",
    "run",
    "set_query_handler",
    "set_signal_handler",
    "set_update_handler",
    "side_effect",
    "signal",
    "sleep",
    "start_activity",
    "start_activity_method",
    "start_child_workflow",
    "start_local_activity",
    "start_local_activity_method",
    "unsafe",
    "update",
    "upsert_search_attributes",
    "uuid4",
    "wait",
    "wait_condition",
    "wait_for_signal",
    "metric_meter",
]

_install_guards()
