"""The distribution installs one import package, ``spindle``, and nothing else at top level.

docs/OVERVIEW.md#layout: the folders ``sdk/``, ``widgets/`` and ``controlplane/`` map onto
``spindle``, ``spindle.widgets`` and ``spindle.controlplane``. A user's own ``widgets.py``,
``sdk/`` or ``controlplane.py`` (common names in a notebook folder) must never shadow them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = {"spindle": REPO / "sdk", "spindle.widgets": REPO / "widgets", "spindle.controlplane": REPO / "controlplane"}


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _package_folders() -> dict[str, Path]:
    """Every folder of the three trees that holds Python or package data, by its import name."""
    found: dict[str, Path] = {}
    for name, root in FOLDERS.items():
        for folder in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
            if "__pycache__" in folder.parts or not any(f.is_file() for f in folder.iterdir()):
                continue
            found[".".join((name, *folder.relative_to(root).parts))] = folder
    return found


def test_pyproject_lists_every_package_folder_and_maps_the_three_trees() -> None:
    tool = _pyproject()["tool"]["setuptools"]
    assert tool["package-dir"] == {"spindle": "sdk", "spindle.widgets": "widgets",
                                   "spindle.controlplane": "controlplane"}
    assert sorted(tool["packages"]) == sorted(_package_folders())


def test_console_script_and_plugins_point_into_spindle() -> None:
    project = _pyproject()["project"]
    targets = [project["scripts"]["spindle"], *project["entry-points"].get("spindle.cli", {}).values(),
               *project["entry-points"]["pytest11"].values()]
    assert all(t.startswith("spindle.") for t in targets), targets


def test_all_extra_holds_every_optional_dependency() -> None:
    extras = _pyproject()["project"]["optional-dependencies"]
    runtime = {dep for name, deps in extras.items() if name not in ("test", "all") for dep in deps}
    assert runtime <= set(extras["all"]), runtime - set(extras["all"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, text=True)
    (whl,) = out.glob("spindle-*.whl")
    return whl


def test_wheel_holds_only_the_spindle_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        tops = {n.split("/", 1)[0] for n in z.namelist()}
        names = set(z.namelist())
    assert {t for t in tops if not t.endswith(".dist-info")} == {"spindle"}
    for data in ("spindle/py.typed", "spindle/widgets/static/embed.js", "spindle/dsl/schema.json",
                 "spindle/api/service.proto", "spindle/controlplane/store/schema/spanner_v1.sql"):
        assert data in names, data


def test_fresh_venv_imports_everything_beside_shadowing_names(wheel: Path, tmp_path: Path) -> None:
    """``pip install`` (not editable) into a new venv, then import every module of the package
    from a folder holding a ``widgets.py``, an ``sdk/`` and a ``controlplane.py`` of its own."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # The dependencies come from this test run's environment (no download): a .pth line adds its
    # site-packages after the new venv's own, so only the wheel provides `spindle`.
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True)

    user = tmp_path / "notebooks"
    (user / "sdk").mkdir(parents=True)
    (user / "sdk" / "__init__.py").write_text("raise ImportError('the user sdk/ was imported')\n")
    (user / "widgets.py").write_text("raise ImportError('the user widgets.py was imported')\n")
    (user / "controlplane.py").write_text("raise ImportError('the user controlplane.py was imported')\n")
    script = (
        "import importlib, pkgutil, sys, spindle\n"
        "assert 'site-packages' in spindle.__file__, spindle.__file__\n"
        "mods = [m.name for m in pkgutil.walk_packages(spindle.__path__, 'spindle.')]\n"
        "assert 'spindle.widgets' in mods and 'spindle.controlplane.server' in mods, mods\n"
        "for m in mods:\n"
        "    if m.endswith('__main__'): continue\n"
        "    importlib.import_module(m)\n"
        "from spindle import Client, Worker, workflow, activity\n"
        "from spindle.widgets import HistoryGraph, ExecutionBrowser, DagView\n"
        "from spindle.testing import WorkflowEnvironment\n"
        "from spindle.controlplane import embedded\n"
        "assert not {'sdk', 'widgets', 'controlplane'} & set(sys.modules), 'a shadowing module was imported'\n"
        "print(len(mods))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    done = subprocess.run([str(py), "-c", script], cwd=user, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 100
    cli = subprocess.run([str(venv / "bin" / "spindle"), "--help"], cwd=user, env=env,
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "workflow" in cli.stdout and "dsl" in cli.stdout


@pytest.mark.parametrize("entry", [["pytest"], ["python", "-m", "pytest"]], ids=["pytest", "python-m-pytest"])
def test_pytest_starts_in_the_repository(entry: list[str]) -> None:
    """Both ``pytest`` and ``python -m pytest`` collect and run from the repository root."""
    bindir = Path(sys.executable).parent
    cmd = [str(bindir / entry[0]) if entry[0] == "pytest" else sys.executable, *entry[1:],
           "-q", "-p", "no:cacheprovider", "tests/sdk/runtime/test_instance_seam.py"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
