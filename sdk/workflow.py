"""Workflow-side API: decorators and the functions workflow code calls.

Importing this module also installs the determinism guards (``time.time``,
``random``, ``uuid.uuid4``, ``datetime.now`` raise inside workflow code only).
"""

from __future__ import annotations

from spindle._retry_policy import RetryPolicy
from spindle._statemachines.activity import ActivityHandle
from spindle._statemachines.child_workflow import ChildWorkflowHandle
from spindle._workflow_api import (
    DEFAULT_VERSION,
    ExternalWorkflowHandle,
    continue_as_new,
    deprecate_patch,
    execute_activity,
    execute_child_workflow,
    get_external_workflow_handle,
    get_version,
    in_workflow,
    info,
    logger,
    now,
    patched,
    record_marker,
    random,
    set_signal_handler,
    side_effect,
    sleep,
    start_activity,
    start_child_workflow,
    upsert_search_attributes,
    uuid4,
    wait_condition,
    wait_for_signal,
)
from spindle._workflow_defn import WorkflowDefinition, defn, query, run, signal, update
from spindle._workflow_guard import install as _install_guards
from spindle._workflow_info import ParentInfo, WorkflowInfo
from spindle._workflow_runtime import ContinueAsNewError

__all__ = [
    "ActivityHandle",
    "ChildWorkflowHandle",
    "ContinueAsNewError",
    "DEFAULT_VERSION",
    "ExternalWorkflowHandle",
    "ParentInfo",
    "RetryPolicy",
    "WorkflowDefinition",
    "WorkflowInfo",
    "continue_as_new",
    "defn",
    "deprecate_patch",
    "execute_activity",
    "execute_child_workflow",
    "get_external_workflow_handle",
    "get_version",
    "in_workflow",
    "info",
    "logger",
    "now",
    "patched",
    "record_marker",
    "query",
    "random",
    "run",
    "set_signal_handler",
    "side_effect",
    "signal",
    "sleep",
    "start_activity",
    "start_child_workflow",
    "update",
    "upsert_search_attributes",
    "uuid4",
    "wait_condition",
    "wait_for_signal",
]

_install_guards()
