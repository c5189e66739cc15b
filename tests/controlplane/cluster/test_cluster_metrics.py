"""``server start``'s ``metrics: {listen: HOST:PORT}``: validated, and the member serves /metrics there."""

from __future__ import annotations

import urllib.request

from pathlib import Path

import pytest

from prometheus_client.parser import text_string_to_metric_families

from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig
from spindle.controlplane.cluster._config import ConfigError, parse_config


def base(tmp_path: Path) -> dict:
    return {"store": {"sqlite": {"path": str(tmp_path / "m.db")}}, "auth": {"mode": "none"}}


def test_metrics_listen_is_checked(tmp_path: Path) -> None:
    # server start serves metrics unless the file turns them off (issue 18: "on in server start"), on this
    # machine only unless the file says where (issue 26: they name every namespace and task queue)
    assert parse_config(base(tmp_path)).metrics_listen == "127.0.0.1:9090"
    assert parse_config({**base(tmp_path), "metrics": {"listen": ""}}).metrics_listen == ""
    assert parse_config({**base(tmp_path), "metrics": {"listen": "0.0.0.0:9090"}}).metrics_listen == "0.0.0.0:9090"
    with pytest.raises(ConfigError, match=r"metrics.listen: '9090' must be HOST:PORT"):
        parse_config({**base(tmp_path), "metrics": {"listen": "9090"}})
    with pytest.raises(ConfigError, match=r"metrics: expected \{listen: HOST:PORT, "):
        parse_config({**base(tmp_path), "metrics": {"port": 9090}})


async def test_a_member_serves_its_metrics(tmp_path: Path) -> None:
    cfg = ClusterConfig(store=StoreConfig("sqlite", path=str(tmp_path / "m.db")), num_shards=4, listen="127.0.0.1:0",
                        member_id="solo", metrics_listen="127.0.0.1:0")
    node = ClusterNode(cfg)
    await node.start()
    try:
        assert node.metrics_address.startswith("127.0.0.1:")
        with urllib.request.urlopen(f"http://{node.metrics_address}/metrics", timeout=10) as r:
            fams = {f.name: f for f in text_string_to_metric_families(r.read().decode())}
        assert fams["spindle_shards_owned"].samples[0].value == 4
        assert "spindle_rpc_requests" in fams and "spindle_persistence_latency_seconds" in fams
    finally:
        await node.stop()


def _samples(node: ClusterNode) -> dict:
    from prometheus_client import generate_latest

    assert node.metrics is not None
    out: dict = {}
    for fam in text_string_to_metric_families(generate_latest(node.metrics.registry).decode()):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _value(m: dict, name: str, **labels: str) -> float:
    return sum(v for lab, v in m.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


@pytest.mark.timeout(120)
async def test_members_count_lease_renewals_and_shard_moves(spanner_instance) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from spindle.controlplane.store.spanner import SpannerStore

    inst = spanner_instance
    db = inst.new_database_id()

    def member(name: str) -> ClusterNode:
        cfg = ClusterConfig(store=StoreConfig("spanner", inst.project, inst.instance_id, db), num_shards=4,
                            listen="127.0.0.1:0", member_id=name, lease_ttl=2.0, lease_renew_interval=0.3,
                            metrics_listen="127.0.0.1:0")
        return ClusterNode(cfg, store=SpannerStore(inst.project, inst.instance_id, db, client=inst.client))

    a = member("a")
    await a.start()
    b = member("b")
    try:
        m = _samples(a)
        assert _value(m, "spindle_shard_ownership_changes_total", change="acquired") == 4
        assert _value(m, "spindle_lease_renewals_total", result="ok") >= 1
        await b.start()
        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        while len(a.engine.shards) + len(b.engine.shards) != 4 or not b.engine.shards or not a.engine.shards:
            assert loop.time() < end, "the shards were not shared"
            await asyncio.sleep(0.1)
        ma, mb = _samples(a), _samples(b)
        moved = _value(mb, "spindle_shard_ownership_changes_total", change="acquired")
        assert moved == len(b.engine.shards) >= 1
        assert _value(ma, "spindle_shard_ownership_changes_total", change="released") == moved
        assert _value(ma, "spindle_shard_ownership_changes_total", change="lost") == 0
        assert _value(ma, "spindle_lease_renewals_total", result="failed") == 0
        assert _value(ma, "spindle_shards_owned") == 4 - moved
    finally:
        for n in (b, a):
            if n.server is not None:
                try:
                    await n.stop()
                except Exception:  # noqa: BLE001 - already stopped
                    pass


class _LeaseStore:
    """Just what LeaseManager.renew calls: the lease of shard 2 turns out taken; ``down`` fails the round."""

    def __init__(self) -> None:
        self.down = False

    async def heartbeat_member(self, member_id: str, address: str, now_ms: int, started_ms: int) -> None:
        if self.down:
            raise ConnectionError("store unreachable")

    async def renew_leases(self, member_id: str, held: dict, now_ms: int, ttl_ms: int) -> list[int]:
        return [2] if 2 in held else []


async def test_renewal_rounds_and_lost_shards_are_counted() -> None:
    import asyncio

    from prometheus_client import generate_latest

    from spindle.controlplane._metrics import ServerMetrics
    from spindle.controlplane.cluster._leases import LeaseManager

    released: list[int] = []

    async def on_release(sid: int) -> None:
        released.append(sid)

    async def on_acquire(sid: int, range_id: int) -> None:
        pass

    store = _LeaseStore()
    lm = LeaseManager(store, "m", "127.0.0.1:1", 4, ttl=2.0, renew_interval=0.5,  # type: ignore[arg-type]
                      on_acquire=on_acquire, on_release=on_release)
    lm.metrics = metrics = ServerMetrics()
    lm._main = asyncio.get_running_loop()
    lm.held = {1: 7, 2: 7}
    await lm.renew()  # shard 2 was taken by another member: dropped at once
    store.down = True
    with pytest.raises(ConnectionError):
        await lm.renew()
    assert released == [2] and lm.held == {1: 7}
    m: dict = {}
    for fam in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in fam.samples:
            m.setdefault(s.name, []).append((s.labels, s.value))
    assert _value(m, "spindle_lease_renewals_total", result="ok") == 1
    assert _value(m, "spindle_lease_renewals_total", result="failed") == 1
    assert _value(m, "spindle_shard_ownership_changes_total", change="lost") == 1
