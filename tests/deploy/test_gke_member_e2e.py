"""The GKE module's configuration runs: one member started from the ConfigMap the module renders (the init
container's command applied, secrets at their mount paths, ports moved to free ones) against the Spanner
emulator, after `spindle admin setup-schema` as docs/DEPLOYING_GCP.md says. The pod's readiness probe (the
image's health script with the module's probe settings) sees SERVING, /metrics answers on metrics.listen, and
the bootstrap admin key from "Secret Manager" works over TLS with the public CA."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from pathlib import Path
from typing import Any

import pytest

from deploy_helpers import HEALTHCHECK_SCRIPT, TFVARS, evaluate, render_in_pod, write_secrets
from spanner_emulator import SpannerTestInstance

pytestmark = pytest.mark.timeout(240)
SPINDLE = str(Path(sys.executable).parent / "spindle")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_member_started_from_the_modules_config_map_serves(spanner_instance: SpannerTestInstance,
                                                              tmp_path: Path) -> None:
    import json

    db = spanner_instance.new_database_id()
    tfvars: dict[str, Any] = {**TFVARS, "project_id": spanner_instance.project,
                              "spanner_instance": spanner_instance.instance_id, "spanner_database": db,
                              "num_shards": 4, "archive_uri": "", "blob_store_uri": "", "archival_allowed_roots": [],
                              "lease_ttl": "3s", "lease_renew_interval": "500ms"}
    proc = evaluate(tmp_path / "tf", tfvars)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rendered = {k: v["value"] for k, v in json.loads(proc.stdout).items()}
    root = tmp_path / "pod"
    secrets = root / rendered["secrets_dir"].lstrip("/")
    write_secrets(secrets, rendered["secret_files"], tfvars["public_hostname"], "spindle-member")
    config = render_in_pod(rendered, root, "spindle-0")
    ports = rendered["ports"]
    free = {name: free_port() for name in ports}  # this machine is shared: no fixed ports
    text = config.read_text()
    for name, port in ports.items():
        text = text.replace(f"0.0.0.0:{port}", f"127.0.0.1:{free[name]}")
    config.write_text(text)
    env = {**os.environ, **spanner_instance.emulator.client_env(), "PYTHONUNBUFFERED": "1"}

    # docs/DEPLOYING_GCP.md: the schema, once, with the platform team's credentials
    setup = subprocess.run([SPINDLE, "admin", "setup-schema", "--project", spanner_instance.project, "--instance",
                            spanner_instance.instance_id, "--database", db], env=env, capture_output=True, text=True,
                           timeout=120)
    assert setup.returncode == 0, setup.stdout + setup.stderr

    # the image's ENTRYPOINT with the module's args (the config path moved under the test's root)
    args = [str(config) if a == rendered["config_dir"] + "/config.yaml" else a for a in rendered["server_args"]]
    assert str(config) in args
    server = subprocess.Popen([SPINDLE, "server", "start", *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "listening on" in line:
                break
        assert any("listening on" in ln for ln in lines), "".join(lines)
        listening = lines[-1]
        assert "spindle-0.spindle-members.spindle.svc.cluster.local" in listening and "TLS" in listening
        assert "API keys required" in listening and f"metrics at http://127.0.0.1:{free['metrics']}/metrics" in listening

        # the readiness probe, as the pod runs it (address moved to the free port, CA under the test's root)
        probe_env = {**os.environ, **rendered["healthcheck_env"],
                     "SPINDLE_HEALTHCHECK_ADDRESS": f"127.0.0.1:{free['public']}",
                     "SPINDLE_HEALTHCHECK_CA_FILE": str(secrets / rendered["secret_files"]["tls_ca"])}
        for _ in range(60):
            probe = subprocess.run([sys.executable, str(HEALTHCHECK_SCRIPT)], env=probe_env, capture_output=True,
                                   text=True, timeout=30)
            if probe.returncode == 0:
                break
            time.sleep(0.5)
        assert probe.returncode == 0, probe.stderr
        assert probe.stdout.strip().endswith("SERVING")

        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(f"http://127.0.0.1:{free['metrics']}/metrics", timeout=10) as resp:
            families = {f.name: f for f in text_string_to_metric_families(resp.read().decode())}
        assert families["spindle_shards_owned"].samples[0].value == 4  # the only member owns every shard

        # the bootstrap admin key (the "Secret Manager" file) over TLS with the public CA, as in the docs
        key = (secrets / rendered["secret_files"]["bootstrap_admin_key"]).read_text().strip()
        listed = subprocess.run([SPINDLE, "admin", "api-key", "list", "--address", f"127.0.0.1:{free['public']}",
                                 "--tls-ca", str(secrets / rendered["secret_files"]["tls_ca"]),
                                 "--tls-server-name", tfvars["public_hostname"]],
                                env={**os.environ, "SPINDLE_API_KEY": key}, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "bootstrap admin" in listed.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            rc = server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise
    rest = server.stdout.read() if server.stdout else ""
    assert rc == 0, "".join(lines) + rest  # SIGTERM: shards handed over, clean exit
