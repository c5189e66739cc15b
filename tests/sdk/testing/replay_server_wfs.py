"""Workflows for replaying histories fetched from a server (`map_histories`, `spindle replay --query`).

All of them register the type name "Shipment" and finish in well under a second on a
real clock. ``ShipmentV1`` is the deployed code; ``ShipmentNotifyFirst`` is a changed
version that inserts an activity before the existing first one without ``workflow.patched``:
replaying a V1 history with it must report a non-determinism at the first activity.
The ``Just*`` workflows give the shape of temporalio's replay sample (an activity, a
timer, a timer then an activity), in our own words.
"""

from __future__ import annotations

from datetime import timedelta

from spindle import activity, workflow

TIMEOUT = timedelta(seconds=10)


@activity.defn
async def pack(parcel: str) -> str:
    return f"packed-{parcel}"


@activity.defn
async def ship(parcel: str) -> str:
    return f"shipped-{parcel}"


@activity.defn
async def notify_customer(parcel: str) -> str:
    return f"notified-{parcel}"


ACTIVITIES = [pack, ship, notify_customer]


@workflow.defn(name="Shipment")
class ShipmentV1:
    @workflow.run
    async def run(self, parcel: str) -> list[str]:
        a = await workflow.execute_activity(pack, parcel, start_to_close_timeout=TIMEOUT)
        await workflow.sleep(timedelta(milliseconds=10))
        b = await workflow.execute_activity(ship, parcel, start_to_close_timeout=TIMEOUT)
        return [a, b]


@workflow.defn(name="Shipment")
class ShipmentNotifyFirst:
    @workflow.run
    async def run(self, parcel: str) -> list[str]:
        n = await workflow.execute_activity(notify_customer, parcel, start_to_close_timeout=TIMEOUT)
        a = await workflow.execute_activity(pack, parcel, start_to_close_timeout=TIMEOUT)
        await workflow.sleep(timedelta(milliseconds=10))
        b = await workflow.execute_activity(ship, parcel, start_to_close_timeout=TIMEOUT)
        return [n, a, b]


@workflow.defn
class JustGreet:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(pack, name, start_to_close_timeout=TIMEOUT)


@workflow.defn
class JustWait:
    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.sleep(timedelta(milliseconds=50))
        return f"waited for {name}"


@workflow.defn
class WaitThenGreet:
    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.sleep(timedelta(milliseconds=50))
        return await workflow.execute_activity(ship, name, start_to_close_timeout=TIMEOUT)


SAMPLE_SHAPE = [JustGreet, JustWait, WaitThenGreet]
