"""The archive phase selects like the live phase: the query, and only runs started by the job's cutoff."""

from __future__ import annotations

import pytest

from spindle.api import messages_pb2 as pb
from spindle.controlplane.archival import ArchivedRun
from spindle.controlplane.erasure._runner import archive_selector
from spindle.controlplane.visibility import QueryError


def archived(run_id: str, customer: str, start_ms: int) -> ArchivedRun:
    attrs = pb.SearchAttributes(indexed_fields={"CustomerId": pb.Payload(
        metadata={"encoding": b"json/plain", "type": b"Keyword"}, data=f'"{customer}"'.encode())})
    return ArchivedRun(workflow_id="wf-" + run_id, run_id=run_id, workflow_type="Order", status=1, task_queue="q",
                       start_time_ms=start_ms, close_time_ms=start_ms + 10, history_length=3,
                       search_attributes=attrs, memo=pb.Memo())


def test_a_run_started_after_the_cutoff_is_not_selected_even_when_the_query_matches() -> None:
    select = archive_selector("CustomerId = 'c-42'", {"CustomerId": "Keyword"}, cutoff_ms=1_000)
    assert select(archived("before", "c-42", 999)) and select(archived("at", "c-42", 1_000))
    assert not select(archived("after", "c-42", 1_001))
    assert not select(archived("other", "c-7", 500))


def test_a_bad_query_is_refused_before_any_run_is_looked_at() -> None:
    with pytest.raises(QueryError):
        archive_selector("CustomerId = ", {"CustomerId": "Keyword"}, cutoff_ms=1_000)
