"""What the client reads of a workflow definition or handler method: its wire name and result type hint.

A call may name a workflow (``client.start_workflow(Order.run, ...)``) or a signal, query or update
(``handle.signal(Order.cancel)``) by the decorated target or by its name; these functions turn
either into the name sent on the wire and the return annotation used to decode a result.
"""

from __future__ import annotations

from typing import Any

__all__ = ["QUERY_ATTR", "SIGNAL_ATTR", "START_ARGS_ATTR", "UPDATE_ATTR", "handler_name_and_hint",
           "workflow_name_and_hint"]

QUERY_ATTR = "__spindle_query_definition__"
SIGNAL_ATTR = "__spindle_signal_definition__"
UPDATE_ATTR = "__spindle_update_definition__"
#: A definition may rewrite its start arguments (a DslWorkflow wraps its inputs with
#: its DAG): ``defn.__spindle_start_args__(args) -> args``. Looked up by name so
#: that the client never imports ``spindle.dsl``.
START_ARGS_ATTR = "__spindle_start_args__"


def workflow_name_and_hint(target: Any) -> tuple[str, Any]:
    """(workflow type name, result type hint) of a definition, decorated target or name.

    Raises:
        TypeError: ``target`` is neither a str nor a workflow definition.
    """
    if isinstance(target, str):
        return target, None
    from spindle._workflow.defn import WorkflowDefinition

    d = WorkflowDefinition.from_target(target)
    return d.name, d.return_type


def handler_name_and_hint(target: Any, attr: str) -> tuple[str, Any]:
    """(wire name, return type hint) of a signal/query/update given its method or name.

    ``attr`` is the definition attribute looked at first (:data:`SIGNAL_ATTR`,
    :data:`QUERY_ATTR` or :data:`UPDATE_ATTR`); the other two are tried after it.

    Raises:
        TypeError: ``target`` is neither a str nor a decorated handler method.
    """
    if isinstance(target, str):
        return target, None
    d = getattr(target, attr, None)
    if d is None:
        for a in (SIGNAL_ATTR, QUERY_ATTR, UPDATE_ATTR):
            d = getattr(target, a, None)
            if d is not None:
                break
    if d is None:
        raise TypeError(
            f"expected a handler name or a method decorated with @workflow.signal/query/update, got {target!r}"
        )
    return str(d.name), d.handler.return_type
