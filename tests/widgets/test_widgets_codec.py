"""The widgets decode payloads with the codecs of the client they are given (or ``codecs=``).

Before: a recorded history (as the server stores it, e.g. ``spindle workflow show -o json``)
of an encrypting deployment was drawn with every input, result and failure opaque, and
the widgets had no way to take a codec.
"""

from __future__ import annotations

import os

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from spindle import activity, workflow
from spindle.client import Client, History
from spindle.converter import EncryptionCodec
from spindle.exceptions import ApplicationError, WorkflowFailureError
from spindle.widgets import HistoryGraph
from spindle.widgets._payloads import OpaquePayload
from spindle.worker import Worker

pytest.importorskip("cryptography")

KEY = os.urandom(32)
CARD = "4111-2222-3333-4444"


@activity.defn
async def charge_card(card: str) -> str:
    raise ApplicationError(f"card {card} declined", type="Declined", non_retryable=True)


@workflow.defn
async def pay(card: str) -> str:
    return await workflow.execute_activity(charge_card, card, start_to_close_timeout=timedelta(seconds=10))


@pytest.fixture
async def stored_history(tmp_path: Path) -> AsyncIterator[tuple[History, Client]]:
    """(the run's history as the server stores it, a client holding the key)."""
    raw = await Client.connect("embedded:" + str(tmp_path / "codec.db"))
    secure = Client(raw.stub, namespace=raw.namespace, codecs=[EncryptionCodec(KEY, strict=True)])
    async with Worker(secure, task_queue="codec", workflows=[pay], activities=[charge_card]):
        with pytest.raises(WorkflowFailureError):
            await secure.execute_workflow(pay, CARD, id="pay", task_queue="codec")
    try:
        yield await raw.get_workflow_handle("pay").fetch_history(), secure
    finally:
        await raw.close()


def activity_node(graph: HistoryGraph) -> object:
    return next(n for n in graph.model.nodes() if n.kind == "activity")


def test_without_a_codec_payloads_stay_opaque(stored_history: tuple[History, Client]) -> None:
    history, _ = stored_history
    node = activity_node(HistoryGraph(history))
    assert isinstance(node.input[0], OpaquePayload) and node.input[0].encoding == "binary/encrypted"  # type: ignore[attr-defined]
    assert node.failure["message"] == "Encoded failure"  # type: ignore[attr-defined]
    assert CARD not in HistoryGraph(history).to_svg()


def test_a_client_or_codecs_decode_a_recorded_history(stored_history: tuple[History, Client]) -> None:
    history, secure = stored_history
    for graph in (HistoryGraph(history, client=secure), HistoryGraph(history.to_json(), codecs=secure.codecs)):
        node = activity_node(graph)
        assert node.input == [CARD]  # type: ignore[attr-defined]
        assert node.failure["message"] == f"card {CARD} declined"  # type: ignore[attr-defined]
        assert "raise ApplicationError" in node.failure["stack_trace"]  # type: ignore[attr-defined]
    wrong = HistoryGraph(history, codecs=[EncryptionCodec(os.urandom(32))])  # another key: drawn, opaque
    assert isinstance(activity_node(wrong).input[0], OpaquePayload)  # type: ignore[attr-defined]


async def test_a_handle_is_decoded_by_its_client(stored_history: tuple[History, Client]) -> None:
    _, secure = stored_history
    graph = HistoryGraph(secure.get_workflow_handle("pay"), live=False)
    await graph.refresh()
    assert activity_node(graph).input == [CARD]  # type: ignore[attr-defined]
    graph.close()
