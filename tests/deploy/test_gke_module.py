"""terraform/modules/gcp-gke-control-plane against the server it deploys.

The ConfigMap's server configuration is evaluated by Terraform itself (config.tf uses only
variables and locals, so this runs offline) and then read by Spindle's own configuration
loader, after the pod's init-container command has rendered it, as the DDL of gcp-spanner is
checked against the store's schema. The module's copy of the ServerConfig field names, its
container ports and the server's command line are checked against the real code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from deploy_helpers import (
    HEALTHCHECK_SCRIPT,
    MODULE,
    SET_BY_MODULE,
    TFVARS,
    dockerfile,
    evaluate,
    port_of,
    render_in_pod,
    terraform_bin,
    write_secrets,
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    proc = evaluate(tmp_path_factory.mktemp("gke-config"), TFVARS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {k: v["value"] for k, v in json.loads(proc.stdout).items()}


def test_config_map_is_a_server_config_the_loader_accepts(rendered: dict[str, Any], tmp_path: Path) -> None:
    from spindle.controlplane.cluster._config import load_config

    write_secrets(tmp_path / rendered["secrets_dir"].lstrip("/"), rendered["secret_files"], TFVARS["public_hostname"],
                  "spindle-member")
    path = render_in_pod(rendered, tmp_path, "spindle-1")
    assert "__POD_NAME__" not in path.read_text()
    cfg = load_config(path)  # every key known, every file readable, mTLS between members, etc.
    assert (cfg.store.kind, cfg.store.project, cfg.store.instance, cfg.store.database) == \
        ("spanner", "acme-prod", "spindle-spanner", "spindle")
    assert not cfg.store.auto_setup  # the service account has data access only; the schema is set up beforehand
    member = "spindle-1.spindle-members.spindle.svc.cluster.local"
    ports = rendered["ports"]
    assert port_of(cfg.listen) == ports["public"] and cfg.advertise == f"{member}:{ports['public']}"
    assert port_of(cfg.internal.listen) == ports["internal"] and cfg.internal.advertise == f"{member}:{ports['internal']}"
    assert port_of(cfg.metrics_listen) == ports["metrics"]
    assert cfg.internal.tls is not None and cfg.internal.tls.server_name == "spindle-member"
    assert cfg.tls is not None and not cfg.tls.mutual
    assert cfg.auth.enabled and cfg.auth.bootstrap_admin_key_file.endswith("/bootstrap-admin-key")
    assert cfg.num_shards == 32 and cfg.namespaces == ("default", "orders")
    server = cfg.server_config()
    assert (server.long_poll_timeout, server.max_long_polls) == (30, 5000)
    assert server.archive_uri == TFVARS["archive_uri"] and server.blob_store_uri == TFVARS["blob_store_uri"]
    assert server.archival_allowed_roots == tuple(TFVARS["archival_allowed_roots"])


def test_server_settings_validation_lists_exactly_the_serverconfig_fields() -> None:
    from spindle.controlplane.config import ServerConfig

    text = (MODULE / "variables.tf").read_text()
    block = text.split('variable "server_settings"', 1)[1].split("\nvariable ", 1)[0]
    listed = re.findall(r'^\s+"([a-z_0-9]+)",?$', block, re.MULTILINE)
    real = [f.name for f in fields(ServerConfig) if f.name not in SET_BY_MODULE]
    assert sorted(listed) == sorted(real), (
        f"variables.tf server_settings lists {sorted(set(listed) - set(real))} that ServerConfig lacks and misses "
        f"{sorted(set(real) - set(listed))}: update the list in the validation of server_settings")
    # the fields left out are written by the module from their own variables
    config_tf = (MODULE / "config.tf").read_text()
    for name in SET_BY_MODULE:
        assert f"var.{name}" in config_tf, f"ServerConfig.{name} is neither in server_settings nor set by config.tf"


def test_terraform_refuses_an_unknown_server_setting(tmp_path: Path) -> None:
    proc = evaluate(tmp_path, {**TFVARS, "server_settings": {"long_pole_timeout": 30}})
    assert proc.returncode != 0
    assert "server_settings: unknown setting" in proc.stdout + proc.stderr


def test_container_ports_match_the_dockerfile_and_the_statefulset(rendered: dict[str, Any]) -> None:
    ports = rendered["ports"]
    exposed = {int(p.split("/")[0]) for i in dockerfile()[1][-1].all("EXPOSE") for p in i.args.split()}
    assert set(ports.values()) == exposed
    k8s = (MODULE / "kubernetes.tf").read_text()
    for name in ports:
        assert re.search(rf"container_port\s*=\s*local\.ports\.{name}\b", k8s), f"no container port for {name}"
    assert 'target_port = "grpc"' in k8s and 'target_port = "internal"' in k8s and 'target_port = "metrics"' in k8s


def test_pod_command_line_and_probe_settings_are_real(rendered: dict[str, Any]) -> None:
    from spindle.cli import cli, server

    (entry,) = dockerfile()[1][-1].all("ENTRYPOINT")
    argv = entry.exec_form() + rendered["server_args"]
    assert argv[1:3] == ["server", "start"]
    start = cli.get_command(None, "server").get_command(None, "start")  # type: ignore[union-attr]
    assert start is server.start
    real = {o for p in start.params for o in p.opts}
    assert {w for w in rendered["server_args"] if w.startswith("--")} <= real
    params = start.make_context("start", argv[3:]).params
    assert params["config"] == rendered["config_dir"] + "/config.yaml"
    assert params["log_format"] == "json"
    script = HEALTHCHECK_SCRIPT.read_text()
    for name in rendered["healthcheck_env"]:
        assert f'"{name}"' in script, f"deploy/healthcheck.py does not read {name}"
    assert rendered["healthcheck_env"]["SPINDLE_HEALTHCHECK_SERVER_NAME"] == TFVARS["public_hostname"]
    assert rendered["healthcheck_env"]["SPINDLE_HEALTHCHECK_ADDRESS"].endswith(f":{rendered['ports']['public']}")
    k8s = (MODULE / "kubernetes.tf").read_text()
    assert 'command = ["spindle-healthcheck"]' in k8s  # the readiness probe runs the image's script


@pytest.mark.parametrize("file_name,kind", [("variables.tf", "variable"), ("outputs.tf", "output")])
def test_every_variable_and_output_is_documented(file_name: str, kind: str) -> None:
    text = (MODULE / file_name).read_text()
    blocks = re.split(rf'(?m)^{kind} "', text)[1:]
    assert blocks
    readme = (MODULE / "README.md").read_text()
    for block in blocks:
        name = block.split('"', 1)[0]
        assert re.search(r'(?m)^\s*description\s*=\s*"[^"]{10,}', block), f"{kind} {name!r} has no description"
        assert f"`{name}`" in readme, f"{kind} {name!r} is missing from the module README"


def test_rolling_updates_keep_members_serving() -> None:
    k8s = (MODULE / "kubernetes.tf").read_text()
    sts = k8s.split('resource "kubernetes_stateful_set_v1"', 1)[1].split("\nresource ", 1)[0]
    assert re.search(r'type\s*=\s*"RollingUpdate"', sts) and "readiness_probe" in sts
    pdb = k8s.split('resource "kubernetes_pod_disruption_budget_v1"', 1)[1].split("\nresource ", 1)[0]
    assert re.search(r'max_unavailable\s*=\s*"1"', pdb)
    assert "replicas >= 2" in (MODULE / "variables.tf").read_text()
    assert re.search(r"condition\s*=\s*var\.replicas <= var\.num_shards", sts)  # every member can own a shard


def test_validate_module(tmp_path: Path) -> None:
    """terraform validate needs the google and kubernetes providers (registry or mirror)."""
    tf = terraform_bin()
    work = tmp_path / "module"
    shutil.copytree(MODULE, work)
    (tmp_path / "empty.tfrc").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "SPINDLE_"))}
    env.update({"TF_CLI_CONFIG_FILE": str(tmp_path / "empty.tfrc"), "CHECKPOINT_DISABLE": "1", "HOME": str(tmp_path)})
    init = subprocess.run([tf, "init", "-backend=false", "-input=false", "-no-color"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    if init.returncode != 0:
        out = init.stdout + init.stderr
        reason = "could not connect to registry" if "could not connect" in out else out.strip()[-300:]
        pytest.skip(f"terraform validate skipped: the google/kubernetes providers cannot be installed here ({reason})")
    proc = subprocess.run([tf, "validate", "-no-color"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
