"""The frontend's handlers of the schedule RPCs (issue 17).

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s
pipeline calls it: ``ns`` is the namespace the request names, already counted against its
``rps_limit`` (and for create and update, client-made blob references already refused).
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._search_attributes import check_search_attributes
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules._wire import check_backfill, check_overlap, check_schedule

from ._validate import check_payloads, require_id


class ScheduleCalls:
    """Create, describe, update, patch, delete and list a namespace's schedules."""

    def __init__(self, config: ServerConfig, engine: HistoryEngine) -> None:
        self.config = config
        self.engine = engine

    def _check_schedule(self, ns: Namespace, schedule: pb.Schedule) -> None:
        check_schedule(schedule, max_id_length=self.config.max_id_length)
        action = schedule.action
        check_payloads(self.config, "schedule.action.input", action.input, action.memo, action.header)
        check_search_attributes(ns, action.search_attributes, "schedule.action.search_attributes")

    async def create(self, req: svc.CreateScheduleRequest, ns: Namespace, deadline: float | None
                     ) -> svc.CreateScheduleResponse:
        require_id(req.schedule_id, "schedule_id", self.config)
        if not req.HasField("schedule"):
            raise InvalidArgument("schedule: required")
        self._check_schedule(ns, req.schedule)
        return await self.engine.create_schedule(ns, req)

    async def describe(self, req: svc.DescribeScheduleRequest, ns: Namespace, deadline: float | None
                       ) -> svc.DescribeScheduleResponse:
        require_id(req.schedule_id, "schedule_id", self.config)
        return await self.engine.describe_schedule(ns, req.schedule_id)

    async def update(self, req: svc.UpdateScheduleRequest, ns: Namespace, deadline: float | None
                     ) -> svc.UpdateScheduleResponse:
        require_id(req.schedule_id, "schedule_id", self.config)
        if not req.HasField("schedule"):
            raise InvalidArgument("schedule: required")
        self._check_schedule(ns, req.schedule)
        await self.engine.update_schedule(ns, req)
        return svc.UpdateScheduleResponse()

    async def patch(self, req: svc.PatchScheduleRequest, ns: Namespace, deadline: float | None
                    ) -> svc.PatchScheduleResponse:
        require_id(req.schedule_id, "schedule_id", self.config)
        p = req.patch
        if p.HasField("pause") and p.HasField("unpause"):
            raise InvalidArgument("patch.unpause: a patch may pause or unpause, not both")
        if p.HasField("trigger_immediately"):
            check_overlap(p.trigger_immediately.overlap_policy, "patch.trigger_immediately.overlap_policy")
        for i, b in enumerate(p.backfill_request):
            check_backfill(b, f"patch.backfill_request[{i}]")
        await self.engine.patch_schedule(ns, req)
        return svc.PatchScheduleResponse()

    async def delete(self, req: svc.DeleteScheduleRequest, ns: Namespace, deadline: float | None
                     ) -> svc.DeleteScheduleResponse:
        require_id(req.schedule_id, "schedule_id", self.config)
        await self.engine.delete_schedule(ns, req.schedule_id)
        return svc.DeleteScheduleResponse()

    async def list(self, req: svc.ListSchedulesRequest, ns: Namespace, deadline: float | None
                   ) -> svc.ListSchedulesResponse:
        if not 0 <= req.maximum_page_size <= 1000:
            raise InvalidArgument(f"maximum_page_size: must be between 0 (default 100) and 1000, got {req.maximum_page_size}")
        try:
            after = req.next_page_token.decode()
        except UnicodeDecodeError:
            raise InvalidArgument("next_page_token: not a token this server returned") from None
        entries, last = await self.engine.list_schedules(ns, after, req.maximum_page_size or 100)
        return svc.ListSchedulesResponse(schedules=entries, next_page_token=last.encode())


__all__ = ["ScheduleCalls"]
