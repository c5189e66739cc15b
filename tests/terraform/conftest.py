"""Fixtures for the Terraform tests.

The provider's virtual environment is installed once and cached by requirements
hash in ``~/.cache/spindle-tf`` (``SPINDLE_TF_CACHE`` overrides); each session
installs the launcher, stubs and mirror into its own temporary directory with the
real ``spindle terraform install-provider`` command.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from pathlib import Path
from typing import Callable, Iterator

import pytest

from _tf_harness import SPINDLE, Api, DevServer, Installed, Terraform, cache_dir, terraform_env

from spindle.cli._terraform_install import default_provider_source, requirements_key


@pytest.fixture(scope="session")
def terraform_bin() -> str:
    path = shutil.which("terraform")
    if path is None:
        pytest.skip("terraform is not on PATH (the Terraform tests need terraform >= 1.5)")
    return path


@pytest.fixture(scope="session")
def provider_install(tmp_path_factory: pytest.TempPathFactory, terraform_bin: str) -> Installed:
    source = default_provider_source()
    key = requirements_key(source / "requirements.txt", sys.executable)
    venv = cache_dir() / f"venv-{key[:16]}"
    dest = tmp_path_factory.mktemp("provider")
    started = time.monotonic()
    proc = subprocess.run([SPINDLE, "terraform", "install-provider", "--dir", str(dest), "--venv", str(venv)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"install-provider failed:\n{proc.stdout}\n{proc.stderr}"
    return Installed(dir=dest, venv=venv, cli_config=dest / "terraformrc", dev_cli_config=dest / "dev.tfrc",
                     stdout=proc.stdout, seconds=time.monotonic() - started)


@pytest.fixture(scope="session")
def spindle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    server = DevServer(tmp_path_factory.mktemp("server") / "spindle.db").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def api(spindle_server: DevServer) -> Iterator[Api]:
    client = Api(spindle_server.address)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def tf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture
def make_tf(tmp_path: Path, provider_install: Installed, tf_home: Path) -> Callable[..., Terraform]:
    """``make_tf(name)``: a Terraform working directory using the filesystem-mirror CLI config."""

    def make(name: str = "work", cli_config: Path | None = None) -> Terraform:
        return Terraform(tmp_path / name, terraform_env(cli_config or provider_install.cli_config, tf_home))

    return make
