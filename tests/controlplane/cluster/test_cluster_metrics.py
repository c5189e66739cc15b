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
    assert parse_config(base(tmp_path)).metrics_listen == ""
    assert parse_config({**base(tmp_path), "metrics": {"listen": "0.0.0.0:9090"}}).metrics_listen == "0.0.0.0:9090"
    with pytest.raises(ConfigError, match=r"metrics.listen: '9090' must be HOST:PORT"):
        parse_config({**base(tmp_path), "metrics": {"listen": "9090"}})
    with pytest.raises(ConfigError, match=r"metrics: expected \{listen: HOST:PORT\}"):
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
