"""The repository's Dockerfile, checked without a container engine: its entrypoint against the real CLI,
its ports against the configuration, its health check against a running server, its user, its stages."""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import subprocess
import sys

from pathlib import Path
from types import ModuleType

import pytest

from deploy_helpers import (
    HEALTHCHECK_SCRIPT,
    REPO,
    copies,
    dockerfile,
    example_cluster_config,
    healthcheck_command,
    port_of,
)


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spindle_deploy_healthcheck", HEALTHCHECK_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runtime():  # type: ignore[no-untyped-def]
    return dockerfile()[1][-1]


def test_multi_stage_build_installs_a_wheel_into_a_slim_runtime() -> None:
    args, stages = dockerfile()
    assert len(stages) >= 2, "the Dockerfile must build in one stage and run in another"
    build, run = stages[0], stages[-1]
    assert "slim" in run.image, f"the runtime stage should start from a slim image, got {run.image}"
    assert any("--wheel" in i.args for i in build.all("RUN")), "the build stage must build a wheel"
    from_build = [c for c in copies(run) if c[2].get("from") == build.name]
    assert from_build, f"the runtime stage must COPY --from={build.name} (the wheel)"
    assert any(".whl" in i.args and "pip install" in i.args for i in run.all("RUN"))
    # the runtime gets the dependencies of the cluster's stores: Spanner and GCS
    install = next(i.args for i in run.all("RUN") if ".whl" in i.args)
    extras = set(re.search(r"\[([a-z,]+)\]", install).group(1).split(","))  # type: ignore[union-attr]
    import tomllib

    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"spanner", "gcs"} <= extras and extras <= set(optional), extras
    # and the sources that make the package: every folder of [tool.setuptools.package-dir]
    package_dirs = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
                       .values())
    copied = {src.rstrip("/") for srcs, _, _ in copies(build) for src in srcs}
    assert package_dirs <= copied, f"the build stage does not copy {package_dirs - copied}"
    assert {"pyproject.toml", "README.md"} <= copied  # README.md: pyproject's readme


def test_entrypoint_and_cmd_are_a_real_spindle_server_start_command_line() -> None:
    from spindle.cli import cli, server

    run = runtime()
    (entry,) = run.all("ENTRYPOINT")
    (cmd,) = run.all("CMD")
    argv = entry.exec_form() + cmd.exec_form()
    assert argv[0] == "spindle"
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["spindle"] == "spindle.cli:main", "the image runs the `spindle` console script"
    assert argv[1:3] == ["server", "start"]
    start = cli.get_command(None, "server").get_command(None, "start")  # type: ignore[union-attr]
    assert start is server.start
    params = start.make_context("start", argv[3:]).params  # click.UsageError (a failed test) on any unknown flag
    assert params["config"] == "/etc/spindle/config.yaml"
    # exact option names (click accepts no abbreviation, but say so anyway)
    real = {o for p in start.params for o in p.opts}
    assert {w.split("=")[0] for w in argv if w.startswith("--")} <= real, (argv, real)
    # the configuration folder exists in the image and belongs to the runtime user
    assert any("/etc/spindle" in i.args for i in run.all("RUN"))


def test_exposed_ports_are_the_ports_the_server_listens_on() -> None:
    from spindle.cli import server

    run = runtime()
    exposed = {int(p.split("/")[0]) for i in run.all("EXPOSE") for p in i.args.split()}
    example = example_cluster_config()
    start_dev = next(p for p in server.start_dev.params if p.name == "port")
    public = port_of(example["listen"])
    assert public == start_dev.default == 7233
    from spindle.controlplane.cluster._config import ClusterConfig

    assert port_of(ClusterConfig.listen) == public  # the config's default listen address
    expected = {public, port_of(example["internal"]["listen"]), port_of(example["metrics"]["listen"])}
    assert exposed == expected, f"EXPOSE {sorted(exposed)}; the configuration uses {sorted(expected)}"


def test_runs_as_a_non_root_user_with_a_numeric_id() -> None:
    run = runtime()
    users = run.all("USER")
    assert users, "the runtime stage must set USER"
    user = users[-1].args
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER {user}: must be a numeric, non-zero uid (runAsNonRoot)"
    assert not gid or (gid.isdigit() and int(gid) != 0)
    created = " ".join(i.args for i in run.all("RUN"))
    assert f"--uid {uid}" in created, f"uid {uid} is not created by useradd in the runtime stage"
    # nothing after USER switches back to root
    last_user = run.instructions.index(users[-1])
    assert not [i for i in run.instructions[last_user + 1:] if i.keyword == "RUN"]


def test_healthcheck_runs_the_installed_grpc_health_script() -> None:
    run = runtime()
    command = healthcheck_command(run)
    installed = {dest: srcs for srcs, dest, flags in copies(run) if "from" not in flags}
    assert command[0] in {Path(d).name for d in installed} or command[0] in installed, \
        f"HEALTHCHECK runs {command[0]!r}, which no COPY installs"
    dest = next(d for d in installed if Path(d).name == Path(command[0]).name)
    assert Path(dest).parent.as_posix() in ("/usr/local/bin", "/usr/bin"), "it must be on PATH"
    assert installed[dest] == ["deploy/healthcheck.py"] and HEALTHCHECK_SCRIPT.is_file()
    assert HEALTHCHECK_SCRIPT.read_text().startswith("#!/usr/bin/env python3")
    module = load_healthcheck()
    from grpc_health.v1 import health_pb2  # the module the script imports (grpcio-health-checking, a dependency)

    assert health_pb2.HealthCheckResponse.SERVING == 1 and callable(module.check)


def test_dockerignore_keeps_what_the_build_copies() -> None:
    patterns = [ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]

    def ignored(path: str) -> bool:
        result = False
        for p in patterns:
            negate = p.startswith("!")
            pat = p[1:] if negate else p
            if fnmatch.fnmatch(path, pat) or path.startswith(pat.rstrip("/") + "/"):
                result = not negate
        return result

    _, stages = dockerfile()
    for stage in stages:
        for srcs, _, flags in copies(stage):
            if "from" in flags:
                continue
            for src in srcs:
                assert (REPO / src).exists(), f"COPY {src}: no such path in the repository"
                assert not ignored(src.rstrip("/")), f".dockerignore excludes {src}, which the Dockerfile copies"
    assert ignored(".venv") and ignored(".git") and ignored("tests")


def test_healthcheck_script_reports_serving_for_a_live_server_and_fails_otherwise(tmp_path: Path) -> None:
    from spindle_procs import DevServer

    module = load_healthcheck()
    server = DevServer(tmp_path / "hc.db").start()
    try:
        ok, line = module.check({"SPINDLE_HEALTHCHECK_ADDRESS": server.address})
        for _ in range(50):  # SERVING once the process owns its shards (checked in the background)
            if ok:
                break
            import time

            time.sleep(0.1)
            ok, line = module.check({"SPINDLE_HEALTHCHECK_ADDRESS": server.address})
        assert ok, line
        assert line.endswith("SERVING")
        proc = subprocess.run([sys.executable, str(HEALTHCHECK_SCRIPT)], capture_output=True, text=True,
                              env={**os.environ, "SPINDLE_HEALTHCHECK_ADDRESS": server.address}, timeout=60)
        assert proc.returncode == 0, proc.stderr
        port = server.port
    finally:
        server.stop()
    proc = subprocess.run([sys.executable, str(HEALTHCHECK_SCRIPT)], capture_output=True, text=True,
                          env={**os.environ, "SPINDLE_HEALTHCHECK_ADDRESS": f"127.0.0.1:{port}",
                               "SPINDLE_HEALTHCHECK_TIMEOUT": "1"}, timeout=60)
    assert proc.returncode == 1
    assert "UNAVAILABLE" in proc.stderr or "DEADLINE_EXCEEDED" in proc.stderr, proc.stderr


def test_healthcheck_script_speaks_tls_with_the_configured_ca(tmp_path: Path) -> None:
    """As in the GKE pod: the certificate names the public DNS name only; the probe dials 127.0.0.1."""
    from spindle_procs import DevServer
    from tls_certs import CertificateAuthority

    ca = CertificateAuthority()
    cert, key = ca.issue("spindle.example.com", dns_names=["spindle.example.com"]).write(tmp_path, "server")
    ca_file = ca.write(tmp_path)
    module = load_healthcheck()
    server = DevServer(tmp_path / "tls.db", "--tls-cert-file", str(cert), "--tls-key-file", str(key)).start()
    try:
        env = {"SPINDLE_HEALTHCHECK_ADDRESS": server.address, "SPINDLE_HEALTHCHECK_CA_FILE": str(ca_file),
               "SPINDLE_HEALTHCHECK_SERVER_NAME": "spindle.example.com", "SPINDLE_HEALTHCHECK_TIMEOUT": "5"}
        ok, line = module.check(env)
        for _ in range(50):
            if ok:
                break
            import time

            time.sleep(0.1)
            ok, line = module.check(env)
        assert ok, line
        plaintext, why = module.check({"SPINDLE_HEALTHCHECK_ADDRESS": server.address,
                                       "SPINDLE_HEALTHCHECK_TIMEOUT": "1"})
        assert not plaintext, why  # a plaintext probe cannot pass against the TLS port
        wrong_name, why = module.check({**env, "SPINDLE_HEALTHCHECK_SERVER_NAME": "other.example.com"})
        assert not wrong_name and "UNAVAILABLE" in why, why
    finally:
        server.stop()


@pytest.mark.timeout(300)
def test_the_build_stage_sources_make_a_complete_wheel(tmp_path: Path) -> None:
    """Only what the build stage COPYs, built as `python -m build --wheel` would (offline: no isolation)."""
    import fnmatch as fn
    import shutil
    import zipfile

    build = dockerfile()[1][0]
    src = tmp_path / "src"
    src.mkdir()
    for sources, dest, flags in copies(build):
        assert "from" not in flags
        for s in sources:
            target = src / (s if dest in ("./", ".") else dest.lstrip("./"))
            if (REPO / s).is_dir():
                shutil.copytree(REPO / s, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy(REPO / s, target)
    out = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                           str(out), str(src)], capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("*.whl")
    install = next(i.args for i in dockerfile()[1][-1].all("RUN") if ".whl" in i.args)
    pattern = re.search(r"ls (\S+\.whl)", install).group(1)  # type: ignore[union-attr]
    assert fn.fnmatch(f"/tmp/dist/{whl.name}", pattern), (whl.name, pattern)
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        entry = next(z.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    import tomllib

    dirs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in dirs.items():
        for py in (REPO / folder).rglob("*.py"):
            rel = py.relative_to(REPO / folder).as_posix()
            if "__pycache__" in rel:
                continue
            inside = package.replace(".", "/") + "/" + rel
            if any(inside.startswith(p.replace(".", "/") + "/") and p != package and len(p) > len(package)
                   for p in dirs):
                continue  # a sub-folder mapped to another package (spindle.widgets -> widgets/)
            assert inside in names, f"{inside} is missing from the image's wheel"
    assert "spindle/controlplane/store/schema/spanner_v1.sql" in names
    assert "spindle = spindle.cli:main" in entry
    assert "Provides-Extra: spanner" in meta and "Provides-Extra: gcs" in meta
