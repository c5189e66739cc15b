"""``Replayer``: check that workflow code still reproduces recorded histories.

Run it in CI over histories captured from real runs (``handle.fetch_history()``,
``spindle workflow show --output json``) before deploying changed workflow code:
a change that would break running executions raises :class:`NonDeterminismError`
here instead of failing workflow tasks in production.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

from collections.abc import Iterable, Sequence
from typing import Any, Union

from spindle._interceptors.worker import Interceptor, check_interceptors
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.replay import replay
from spindle.api import messages_pb2 as pb
from spindle.common._history import History
from spindle.converter._data_converter import DataConverter

__all__ = ["Replayer", "ReplayResult", "ReplayReport", "HistorySource", "UnknownWorkflowTypeError", "load_history"]

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
class ReplayResult:
    """The outcome of replaying one history.

    Attributes:
        source: where the history came from (a file path, ``"<json>"`` or ``"history of ID"``).
        workflow_id / run_id: of the recorded run.
        workflow_type: the type named by the first event (``""`` if unreadable).
        error: ``None`` when the code reproduced the history; otherwise the
            :class:`NonDeterminismError`, or the error that stopped the replay (an
            unknown workflow type is an :class:`UnknownWorkflowTypeError`, an unreadable file a ``ValueError``
            or ``OSError``, an exception raised by workflow code as is).
    """

    source: str
    workflow_id: str
    run_id: str
    workflow_type: str
    error: BaseException | None

    @property
    def ok(self) -> bool:
        """Whether the history replayed cleanly."""
        return self.error is None


@dataclasses.dataclass(frozen=True)
class ReplayReport:
    """What :meth:`Replayer.replay_workflows` returns: one :class:`ReplayResult` per history, in order."""

    results: Sequence[ReplayResult]

    @property
    def failures(self) -> list[ReplayResult]:
        """The results whose replay failed."""
        return [r for r in self.results if r.error is not None]

    @property
    def ok(self) -> bool:
        """Whether every history replayed cleanly."""
        return not self.failures

    def format(self) -> str:
        """A readable multi-line summary naming each failing history and its error."""
        lines = [f"{len(self.results) - len(self.failures)} of {len(self.results)} histories replayed"]
        for r in self.failures:
            kind = type(r.error).__name__
            lines.append(f"FAILED {r.source} (workflow {r.workflow_id!r}, run {r.run_id!r}, type "
                         f"{r.workflow_type!r}): {kind}: {r.error}")
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

    async def replay_workflow(self, history: HistorySource) -> None:
        """Replay one history; return normally when the code reproduces it.

        Raises:
            NonDeterminismError: the code issues different commands than the history
                recorded (the message names the event id and both sides).
            UnknownWorkflowTypeError: the history's workflow type is not registered.
            ValueError / OSError / TypeError: the history cannot be read (see :func:`load_history`).
            Exception: an error raised by the workflow code itself.
        """
        h, _ = load_history(history)
        self._replay(h)

    async def replay_workflows(self, histories: Iterable[HistorySource]) -> ReplayReport:
        """Replay every history and report each outcome; never raises for a failing history.

        Raises:
            TypeError: ``histories`` yields something that is not a history source.
        """
        results: list[ReplayResult] = []
        for source in histories:
            try:
                h, label = load_history(source)
            except (ValueError, OSError) as e:
                results.append(ReplayResult(str(source), "", "", "", e))
                continue
            wtype = _workflow_type(h)
            try:
                self._replay(h)
                err: BaseException | None = None
            except Exception as e:  # noqa: BLE001 - reported per history
                err = e
            results.append(ReplayResult(label, h.workflow_id, h.run_id, wtype, err))
        return ReplayReport(results)

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

