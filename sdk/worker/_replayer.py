"""``Replayer``: check that workflow code still reproduces recorded histories.

Run it in CI over histories captured from real runs before deploying changed workflow code
(``client.list_workflows(query).map_histories()`` streams them from a server;
``handle.fetch_history()`` and ``spindle workflow show --output json`` capture one): a change
that would break running executions is reported as a :class:`NonDeterminismError` here
instead of failing workflow tasks in production. The names and the behaviour are
temporalio's (``temporalio.worker.Replayer``, ``WorkflowReplayResult(s)``); the class is also
``spindle.testing.Replayer``.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from typing import Any, Union

from spindle._interceptors.worker import Interceptor, check_interceptors
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.replay import replay
from spindle.api import messages_pb2 as pb
from spindle.common._history import History
from spindle.converter._data_converter import DataConverter

__all__ = ["HistorySource", "Replayer", "UnknownWorkflowTypeError", "WorkflowReplayResult", "WorkflowReplayResults",
           "load_history"]

HistorySource = Union[History, str, bytes, os.PathLike[str]]
"""A :class:`History`, its JSON text (``History.to_json()``), or the path of a JSON file."""


class UnknownWorkflowTypeError(LookupError):
    """A history's workflow type is not among the Replayer's workflows."""


def load_history(source: HistorySource) -> tuple[History, str]:
    """Turn ``source`` into a :class:`History`, with a label naming where it came from.

    A ``str`` whose first non-blank character is ``{`` is JSON text; any other
    ``str`` (or a path object) is a file path.

    Raises:
        ValueError: the JSON is malformed or not in the history format.
        OSError: the file cannot be read.
        TypeError: ``source`` is none of the accepted kinds.
    """
    if isinstance(source, History):
        return source, f"history of {source.workflow_id or '?'}"
    if isinstance(source, bytes):
        return History.from_json(source), "<json>"
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return History.from_json(source), "<json>"
    if isinstance(source, (str, os.PathLike)):
        path = pathlib.Path(source)
        text = path.read_text(encoding="utf-8")
        try:
            return History.from_json(text), str(path)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    raise TypeError(f"expected a History, JSON text or a path, got {type(source).__name__}")


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResult:
    """The outcome of replaying one history (temporalio's ``WorkflowReplayResult``; also ``ReplayResult``).

    Attributes:
        workflow_id / run_id: of the recorded run (``""`` when the history could not be read).
        replay_failure: ``None`` when the code reproduced the history; otherwise the
            :class:`NonDeterminismError` (its message names the event), or the error that stopped the
            replay (an unknown workflow type is an :class:`UnknownWorkflowTypeError`, an unreadable file a
            ``ValueError`` or ``OSError``, an exception raised by workflow code as is).
        workflow_type: the type named by the first event (``""`` if unreadable).
        source: where the history came from (a file path, ``"<json>"`` or ``"history of ID"``).
        history: the history replayed. ``Replayer.replay_workflow`` always sets it;
            ``Replayer.replay_workflows`` keeps it only for failures (None for a run that replayed), so
            that replaying a long stream does not hold every history in memory.
    """

    workflow_id: str
    run_id: str
    replay_failure: Exception | None
    workflow_type: str = ""
    source: str = dataclasses.field(default="", repr=False)
    history: History | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def error(self) -> Exception | None:
        """Alias of :attr:`replay_failure` (the name ``spindle.testing.ReplayResult`` had)."""
        return self.replay_failure

    @property
    def ok(self) -> bool:
        """Whether the history replayed cleanly."""
        return self.replay_failure is None


@dataclasses.dataclass(frozen=True)
class WorkflowReplayResults:
    """What :meth:`Replayer.replay_workflows` returns (temporalio's ``WorkflowReplayResults``; also ``ReplayReport``).

    Attributes:
        results: one :class:`WorkflowReplayResult` per history, in the order given.
    """

    results: Sequence[WorkflowReplayResult]

    @property
    def replay_failures(self) -> Mapping[str, Exception]:
        """The failures by run id (by source for a history that could not be read), as temporalio's."""
        return {(r.run_id or r.source): r.replay_failure for r in self.results if r.replay_failure is not None}

    @property
    def failures(self) -> list[WorkflowReplayResult]:
        """The results whose replay failed, in order."""
        return [r for r in self.results if r.replay_failure is not None]

    @property
    def ok(self) -> bool:
        """Whether every history replayed cleanly."""
        return not self.failures

    def format(self) -> str:
        """A readable multi-line summary naming each failing history and its error."""
        lines = [f"{len(self.results) - len(self.failures)} of {len(self.results)} histories replayed"]
        for r in self.failures:
            kind = type(r.replay_failure).__name__
            lines.append(f"FAILED {r.source} (workflow {r.workflow_id!r}, run {r.run_id!r}, type "
                         f"{r.workflow_type!r}): {kind}: {r.replay_failure}")
        return "\n".join(lines)


class Replayer:
    """Replays recorded histories through the given workflow definitions.

    Args:
        workflows: ``@workflow.defn`` classes or functions (or DSL definitions), as
            given to a ``Worker``. The type of each history is read from its first
            event and looked up here by name.
        data_converter: the converter the workflows ran with (default: the SDK's).
        namespace: reported to the workflow by ``workflow.info()``.
        interceptors: worker interceptors (``spindle.worker.Interceptor``) whose workflow
            interceptors wrap each replayed run, as on the worker that recorded it.

    Raises:
        TypeError: an entry is not a workflow definition, or an interceptor is not a
            ``spindle.worker.Interceptor``.
        ValueError: two definitions share a type name.
    """

    def __init__(self, *, workflows: Iterable[Any], data_converter: DataConverter | None = None,
                 namespace: str = "default", interceptors: Sequence[Interceptor] = ()) -> None:
        self._interceptors = check_interceptors(interceptors, "Replayer(interceptors=...)", Interceptor,
                                               "spindle.worker.Interceptor")
        self._defns: dict[str, WorkflowDefinition] = {}
        for w in workflows:
            d = WorkflowDefinition.from_target(w)
            if d.name in self._defns:
                raise ValueError(f"two workflows are registered under the name {d.name!r}")
            self._defns[d.name] = d
        self._converter = data_converter
        self._namespace = namespace

    @property
    def workflow_types(self) -> list[str]:
        """The registered workflow type names."""
        return sorted(self._defns)

    async def replay_workflow(self, history: HistorySource, *, raise_on_replay_failure: bool = True
                              ) -> WorkflowReplayResult:
        """Replay one history and return its result (with the history).

        Raises (only with ``raise_on_replay_failure``, the default; otherwise the error is the
        result's ``replay_failure``):
            NonDeterminismError: the code issues different commands than the history
                recorded (the message names the event id and both sides).
            UnknownWorkflowTypeError: the history's workflow type is not registered.
            ValueError / OSError: the history cannot be read (see :func:`load_history`).
            Exception: an error raised by the workflow code itself.
        Always raises TypeError when ``history`` is not a history source.
        """
        result = self._replay_one(history, keep_history=True)
        if raise_on_replay_failure and result.replay_failure is not None:
            raise result.replay_failure
        return result

    async def replay_workflows(self, histories: Iterable[HistorySource] | AsyncIterable[HistorySource], *,
                               raise_on_replay_failure: bool = True) -> WorkflowReplayResults:
        """Replay each history of ``histories`` (an iterable, or an async iterable such as ``map_histories()``).

        The histories are taken one at a time, so a stream is never held in memory as a whole.
        With ``raise_on_replay_failure`` (the default, as temporalio's) the first failure is raised
        as is and the rest are not replayed; with ``False`` every history is replayed and the result
        has one entry per history, in order.

        Raises:
            NonDeterminismError / UnknownWorkflowTypeError / ValueError / OSError / Exception: the first
                failure, with ``raise_on_replay_failure`` (see :meth:`replay_workflow`).
            TypeError: ``histories`` yields something that is not a history source.
            Exception: what iterating ``histories`` raises (e.g. an ``RPCError`` for a bad query).
        """
        results: list[WorkflowReplayResult] = []

        def take(source: HistorySource) -> None:
            result = self._replay_one(source, keep_history=False)
            if raise_on_replay_failure and result.replay_failure is not None:
                raise result.replay_failure
            results.append(result)

        if isinstance(histories, AsyncIterable):
            iterator = histories.__aiter__()
            try:
                async for source in iterator:
                    take(source)
            finally:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
        else:
            for source in histories:
                take(source)
        return WorkflowReplayResults(results)

    def _replay_one(self, source: HistorySource, *, keep_history: bool) -> WorkflowReplayResult:
        try:
            h, label = load_history(source)
        except (ValueError, OSError) as e:
            return WorkflowReplayResult("", "", e, source=str(source))
        wtype = _workflow_type(h)
        try:
            self._replay(h)
        except Exception as e:  # noqa: BLE001 - reported per history
            return WorkflowReplayResult(h.workflow_id, h.run_id, e, wtype, label, h)
        return WorkflowReplayResult(h.workflow_id, h.run_id, None, wtype, label, h if keep_history else None)

    def _replay(self, h: History) -> None:
        events = h.to_proto_events()
        if not events or events[0].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            raise ValueError("a history must start with a WorkflowExecutionStarted event")
        wtype = events[0].workflow_execution_started_event_attributes.workflow_type
        defn = self._defns.get(wtype)
        if defn is None:
            known = ", ".join(self.workflow_types) or "none"
            raise UnknownWorkflowTypeError(f"workflow type {wtype!r} is not registered with the Replayer (registered: {known})")
        replay(defn, events, converter=self._converter, namespace=self._namespace,
               workflow_id=h.workflow_id, run_id=h.run_id, interceptors=self._interceptors)


def _workflow_type(h: History) -> str:
    if not h.events or h.events[0].event_type != "WorkflowExecutionStarted":
        return ""
    return str(h.events[0].attributes.get("workflow_type", ""))
