"""Schedules from the client: ``create_schedule``, ``ScheduleHandle``, ``list_schedules`` (docs/SCHEDULES.md).

Shaped as Temporal's ``temporalio.client`` schedule calls. ``Client.create_schedule`` /
``get_schedule_handle`` / ``list_schedules`` are thin methods over the functions and classes here.

Errors: every call raises :class:`spindle.exceptions.RPCError` with the server's status:
``NOT_FOUND`` for a schedule that does not exist, ``INVALID_ARGUMENT`` naming the field the
server refused; ``create_schedule`` raises :class:`~spindle.exceptions.ScheduleAlreadyRunningError`
(an ``RPCError`` with status ``ALREADY_EXISTS``) when the id is taken.

Payloads: the action's arguments and memo go through the client's data converter and
codec chain with the context ``(namespace, action id, "workflow.input" / "memo.<key>")``.
Each run the schedule starts has its own workflow id (``{action id}-{time}``), so a codec
that binds ciphertext to the workflow id (``EncryptionCodec(bind_context=True)``, the
default) could not decrypt the run's input in the worker: such a client refuses to send
action arguments or memo (``ValueError``); use ``EncryptionCodec(bind_context=False)`` for
a client that creates schedules with arguments.
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from typing import Any, Protocol

from spindle import exceptions as E
from spindle.api import service_pb2 as svc
from spindle.client._schedule_description import ScheduleDescription, ScheduleListEntry
from spindle.client._schedule_types import Schedule, ScheduleBackfill, ScheduleOverlapPolicy
from spindle.client._schedule_wire import (
    backfill_to_proto,
    description_from_proto,
    list_entry_from_proto,
    overlap_to_proto,
    schedule_to_proto,
)

__all__ = [
    "ScheduleAsyncIterator",
    "ScheduleHandle",
    "ScheduleUpdate",
    "ScheduleUpdateInput",
    "create_schedule",
    "list_schedules",
]


class _ClientLike(Protocol):
    """What schedules need of :class:`spindle.client.Client` (which makes the calls; this module never imports it)."""

    namespace: str
    identity: str
    data_converter: Any
    @property
    def codecs(self) -> Sequence[Any]: ...

    async def _rpc(self, method: str, request: Any, *, not_found: str = ...) -> Any: ...
    async def _encode(self, msg: Any) -> None: ...
    async def _decode(self, msg: Any) -> None: ...


#: How many times ``ScheduleHandle.update`` re-reads and retries when the schedule changed meanwhile.
UPDATE_ATTEMPTS = 10


def _schedule_error(e: E.RPCError) -> E.RPCError:
    """A plain NOT_FOUND RPCError for a missing schedule (the client's mapping reads 'namespace' in its message)."""
    if isinstance(e, E.NamespaceNotFoundError) and e.message.startswith("schedule_id:"):
        err = E.RPCError(e.message, status="NOT_FOUND")
        err.__cause__ = e.__cause__
        return err
    return e


async def _call(client: _ClientLike, method: str, request: Any) -> Any:
    try:
        return await client._rpc(method, request, not_found="rpc")
    except E.RPCError as e:
        mapped = _schedule_error(e)
        if mapped is e:
            raise
        raise mapped from e.__cause__


def _note(note: Any) -> str:
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__} {note!r}")
    return note


def _check_id(schedule_id: Any) -> str:
    if not isinstance(schedule_id, str) or not schedule_id.strip():
        raise ValueError(f"schedule id must be a non-empty str, got {schedule_id!r}")
    return schedule_id


def _refuse_bound_codecs(client: _ClientLike, schedule: Schedule) -> None:
    if not (schedule.action.args or schedule.action.memo):
        return
    from spindle.converter._encryption_codec import EncryptionCodec

    for codec in client.codecs:
        if isinstance(codec, EncryptionCodec) and codec.bind_context:
            raise ValueError(
                "schedule action arguments and memo cannot be bound to a workflow id by EncryptionCodec: each "
                "run gets its own id ('{id}-{time}'), so the worker could not decrypt them; use a client with "
                "EncryptionCodec(..., bind_context=False) to create or update this schedule")


def _encoded_schedule(client: _ClientLike, schedule: Schedule) -> Any:
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a spindle.client.Schedule, got {type(schedule).__name__}")
    _refuse_bound_codecs(client, schedule)
    return schedule_to_proto(schedule, client.data_converter)


async def create_schedule(client: _ClientLike, id: str, schedule: Schedule, *, trigger_immediately: bool = False,
                          backfill: Any = (), memo: Any = None, search_attributes: Any = None) -> ScheduleHandle:
    """See :meth:`spindle.client.Client.create_schedule`."""
    _check_id(id)
    if memo:
        raise ValueError("memo: a schedule's own memo is not stored by Spindle yet; put it on the action "
                         "(ScheduleActionStartWorkflow(memo=...)) to give each run a memo")
    if search_attributes:
        raise ValueError("search_attributes: a schedule's own search attributes are not stored by Spindle yet; put "
                         "them on the action (ScheduleActionStartWorkflow(search_attributes=...)) to index each run")
    backfills = [backfill_to_proto(b) for b in backfill]
    req = svc.CreateScheduleRequest(namespace=client.namespace, schedule_id=id,
                                    schedule=_encoded_schedule(client, schedule),
                                    identity=client.identity, request_id=str(uuid.uuid4()))
    await client._encode(req)
    try:
        await _call(client, "CreateSchedule", req)
    except E.RPCError as e:
        if e.status == "ALREADY_EXISTS":
            raise E.ScheduleAlreadyRunningError(e.message, schedule_id=id) from e
        raise
    handle = ScheduleHandle(client, id)
    if trigger_immediately or backfills:
        patch = svc.SchedulePatch(backfill_request=backfills)
        if trigger_immediately:
            patch.trigger_immediately.overlap_policy = int(schedule.policy.overlap)  # type: ignore[assignment]
        await handle._patch(patch)
    return handle


@dataclasses.dataclass
class ScheduleUpdateInput:
    """What an updater given to :meth:`ScheduleHandle.update` receives: the schedule as it is now."""

    description: ScheduleDescription

    @property
    def schedule(self) -> Schedule:
        """The current schedule (``description.schedule``)."""
        return self.description.schedule


@dataclasses.dataclass
class ScheduleUpdate:
    """What an updater given to :meth:`ScheduleHandle.update` returns: the new schedule (Temporal's class)."""

    schedule: Schedule


_Updater = Callable[[ScheduleUpdateInput], "ScheduleUpdate | Schedule | None | Awaitable[ScheduleUpdate | Schedule | None]"]


class ScheduleHandle:
    """A schedule by id (no call is made to build one). Attribute ``id``: the schedule id."""

    def __init__(self, client: _ClientLike, id: str) -> None:
        self._client = client
        self.id = _check_id(id)

    def __repr__(self) -> str:
        return f"ScheduleHandle(id={self.id!r})"

    @property
    def client(self) -> _ClientLike:
        """The client this handle calls through."""
        return self._client

    async def _patch(self, patch: svc.SchedulePatch) -> None:
        c = self._client
        await _call(c, "PatchSchedule", svc.PatchScheduleRequest(namespace=c.namespace, schedule_id=self.id,
                                                                   patch=patch, identity=c.identity,
                                                                   request_id=str(uuid.uuid4())))

    async def _describe(self) -> tuple[ScheduleDescription, bytes]:
        c = self._client
        resp = await _call(c, "DescribeSchedule", svc.DescribeScheduleRequest(namespace=c.namespace,
                                                                               schedule_id=self.id))
        await c._decode(resp)
        return description_from_proto(self.id, resp), resp.conflict_token

    async def describe(self) -> ScheduleDescription:
        """The schedule, what it did and its next action times (``.info.recent_actions``, ``.info.next_action_times``).

        The action's arguments and memo values come back as ``Payload`` messages (as in
        Temporal); ``spindle.client.decoded_args(desc.schedule.action)`` gives plain values.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such schedule.
        """
        return (await self._describe())[0]

    async def pause(self, *, note: str | None = None) -> None:
        """Pause: no scheduled action is taken until :meth:`unpause` (trigger and backfill still act).

        ``note`` (default ``"Paused via Python SDK"``, Temporal's) is stored as the state's note.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such schedule.
            TypeError: ``note`` is not a str.
        """
        await self._patch(svc.SchedulePatch(pause="Paused via Python SDK" if note is None else _note(note)))

    async def unpause(self, *, note: str | None = None) -> None:
        """Unpause: scheduled actions resume from now on (those due while paused are not taken: no burst).

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such schedule.
            TypeError: ``note`` is not a str.
        """
        await self._patch(svc.SchedulePatch(unpause="Unpaused via Python SDK" if note is None else _note(note)))

    async def trigger(self, *, overlap: ScheduleOverlapPolicy | None = None) -> None:
        """Take one action now (the run's id carries the current time); ``overlap`` overrides the schedule's policy.

        Acts while paused too. Two triggers within the same second name the same workflow id:
        the second one is counted as skipped.

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such schedule.
        """
        await self._patch(svc.SchedulePatch(trigger_immediately=svc.ScheduleTrigger(
            overlap_policy=overlap_to_proto(overlap))))  # type: ignore[arg-type]

    async def backfill(self, *backfill: ScheduleBackfill) -> None:
        """Take now the actions due in each range (as if that time passed), with their own nominal times.

        Raises:
            ValueError: no range given.
            RPCError: ``NOT_FOUND`` (no such schedule), ``INVALID_ARGUMENT`` (too many actions at once).
        """
        if not backfill:
            raise ValueError("backfill: give at least one ScheduleBackfill")
        await self._patch(svc.SchedulePatch(backfill_request=[backfill_to_proto(b) for b in backfill]))

    async def update(self, updater: _Updater) -> None:
        """Replace the schedule with what ``updater`` returns, given the current description.

        ``updater(input)`` receives a :class:`ScheduleUpdateInput` (``input.description``,
        ``input.schedule``) and returns a :class:`ScheduleUpdate`, a :class:`Schedule`, or
        ``None`` to change nothing; it may be async. If the schedule changed between the read
        and the write, it is read again and ``updater`` called again (up to 10 times). What
        the schedule did (its info) is kept; times already passed are not taken again.

        Raises:
            RPCError: ``NOT_FOUND`` (no such schedule), ``INVALID_ARGUMENT`` naming the field,
                ``FAILED_PRECONDITION`` when it kept changing concurrently.
            TypeError: ``updater`` returned something else.
            ValueError, TypeError: the returned schedule (whose fields the updater may have
                assigned, as in Temporal) holds a bad value; the error names the field, as when
                the value is given to the constructor, and the schedule is left unchanged.
        """
        c = self._client
        for attempt in range(UPDATE_ATTEMPTS):
            desc, token = await self._describe()
            result: Any = updater(ScheduleUpdateInput(desc))
            if inspect.isawaitable(result):
                result = await result
            if result is None:
                return
            if isinstance(result, ScheduleUpdate):
                result = result.schedule
            if not isinstance(result, Schedule):
                raise TypeError(f"the updater must return a ScheduleUpdate, a Schedule or None, "
                                f"got {type(result).__name__}")
            req = svc.UpdateScheduleRequest(namespace=c.namespace, schedule_id=self.id,
                                            schedule=_encoded_schedule(c, result), conflict_token=token,
                                            identity=c.identity, request_id=str(uuid.uuid4()))
            await c._encode(req)
            try:
                await _call(c, "UpdateSchedule", req)
                return
            except E.RPCError as e:
                if e.status != "FAILED_PRECONDITION" or attempt == UPDATE_ATTEMPTS - 1:
                    raise

    async def delete(self) -> None:
        """Delete the schedule (the runs it started keep running).

        Raises:
            RPCError: ``NOT_FOUND`` when there is no such schedule.
        """
        c = self._client
        await _call(c, "DeleteSchedule", svc.DeleteScheduleRequest(namespace=c.namespace, schedule_id=self.id,
                                                                     identity=c.identity))


class ScheduleAsyncIterator:
    """The schedules of the namespace, by id: ``async for entry in client.list_schedules()``.

    Pages are fetched as the iteration goes (nothing is called before). Awaiting it returns
    it unchanged, so Temporal's ``async for e in await client.list_schedules()`` works too.
    """

    def __init__(self, client: _ClientLike, *, page_size: int = 100, next_page_token: bytes | None = None) -> None:
        if not isinstance(page_size, int) or isinstance(page_size, bool) or not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be between 1 and 1000, got {page_size!r}")
        self._client = client
        self._page_size = page_size
        self._token = next_page_token or b""
        self._gen: AsyncIterator[ScheduleListEntry] | None = None
        #: The token of the page after the last one read (``None`` after the last page).
        self.next_page_token: bytes | None = self._token or None

    def __await__(self) -> Generator[Any, None, ScheduleAsyncIterator]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    def __aiter__(self) -> ScheduleAsyncIterator:
        return self

    async def __anext__(self) -> ScheduleListEntry:
        if self._gen is None:
            self._gen = self._entries()
        return await self._gen.__anext__()

    async def _entries(self) -> AsyncIterator[ScheduleListEntry]:
        c = self._client
        token = self._token
        while True:
            resp = await _call(c, "ListSchedules", svc.ListSchedulesRequest(
                namespace=c.namespace, maximum_page_size=self._page_size, next_page_token=token))
            token = resp.next_page_token
            self.next_page_token = token or None
            for entry in resp.schedules:
                yield list_entry_from_proto(entry)
            if not token:
                return


def list_schedules(client: _ClientLike, query: str | None, *, page_size: int,
                   next_page_token: bytes | None) -> ScheduleAsyncIterator:
    """See :meth:`spindle.client.Client.list_schedules` (the iterator makes no call until iterated).

    Raises:
        ValueError: ``query`` is given, or ``page_size`` is not 1..1000.
    """
    if query:
        raise ValueError("query: filtering schedules by a visibility query is not supported yet; list them all "
                         "and filter the entries")
    return ScheduleAsyncIterator(client, page_size=page_size, next_page_token=next_page_token)
