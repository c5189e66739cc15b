"""UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: new values of the run's search attributes, and its visibility record rewritten."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from ..._context import HistoryContext
from ..._txn import Txn
from .._run import visibility_task
from .handler import CommandHandler, nothing_to_check, own_namespace


def apply_upsert(ctx: HistoryContext, txn: Txn, a: pb.UpsertWorkflowSearchAttributesCommandAttributes, wtc: int,
                 identity: str) -> None:
    """UpsertWorkflowSearchAttributes and the run's visibility task.

    The values were checked against the namespace's registered types (``validate``).
    """
    txn.event(pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, "upsert_workflow_search_attributes_event_attributes",
              pb.UpsertWorkflowSearchAttributesEventAttributes(workflow_task_completed_event_id=wtc,
                                                               search_attributes=a.search_attributes))
    visibility_task(ctx, txn)


UPSERT_WORKFLOW_SEARCH_ATTRIBUTES = CommandHandler(
    pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, "upsert_workflow_search_attributes_command_attributes",
    check=nothing_to_check, apply=apply_upsert, search_attributes_namespace=own_namespace)

__all__ = ["UPSERT_WORKFLOW_SEARCH_ATTRIBUTES", "apply_upsert"]
