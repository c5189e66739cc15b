"""The installer behind ``spindle terraform install-provider``: the Spindle Terraform provider for local use.

The provider (``terraform/provider/spindle_tf``) is written in Python on the ``tf``
framework, which needs protobuf<6 while Spindle uses protobuf 7. So it runs from a
virtual environment of its own. The installer:

1. creates (or reuses, when ``requirements.txt`` is unchanged) that environment and
   ``pip install``s the provider's pinned requirements into it;
2. generates the provider's copy of the Spindle gRPC stubs from
   ``sdk/api/*.proto`` with that environment's ``grpcio-tools`` (the
   committed modules are protobuf-7 gencode and do not load under protobuf 5);
3. copies the provider sources, writes a launcher script
   ``terraform-provider-spindle``, a filesystem mirror holding it, and two Terraform
   CLI configuration files (filesystem mirror for ``terraform init``; dev_overrides
   for init-less development);
4. returns every path it wrote (the command, ``spindle.cli.terraform``, prints them).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

PROVIDER_HOST, PROVIDER_NAMESPACE, PROVIDER_TYPE = "spindle.local", "spindle", "spindle"
PROVIDER_SOURCE = f"{PROVIDER_HOST}/{PROVIDER_NAMESPACE}/{PROVIDER_TYPE}"
PROVIDER_VERSION = "0.1.0"
LAUNCHER_NAME = f"terraform-provider-{PROVIDER_TYPE}"
PROTO_FILES = ("api/messages.proto", "api/service.proto")  # relative to the spindle package folder (sdk/)
MARKER = ".spindle-requirements.sha256"


class InstallError(Exception):
    """Installation failed; the message says which step and why."""


@dataclass
class InstallResult:
    """What :func:`install_provider` wrote (absolute paths)."""

    dir: Path
    venv: Path
    venv_reused: bool
    gen_dir: Path
    lib_dir: Path
    launcher: Path
    mirror_dir: Path
    mirror_binary: Path
    cli_config: Path
    dev_cli_config: Path
    written: list[Path] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """Environment for running terraform with the filesystem-mirror CLI configuration."""
        return {"TF_CLI_CONFIG_FILE": str(self.cli_config), "CHECKPOINT_DISABLE": "1"}


def repo_root() -> Path:
    """The source checkout this package runs from (editable installs)."""
    return Path(__file__).resolve().parents[2]


def default_provider_source() -> Path:
    """``terraform/provider`` in the source checkout."""
    return repo_root() / "terraform" / "provider"


def proto_root() -> Path:
    """The folder of the ``spindle`` package (``sdk/`` in a checkout); the ``.proto`` files are
    under its ``api/`` and import each other as ``spindle/api/...``."""
    import spindle.api

    return Path(spindle.api.__file__).resolve().parent.parent


def default_install_dir() -> Path:
    """``$XDG_DATA_HOME/spindle/terraform`` (``~/.local/share/spindle/terraform``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "spindle" / "terraform"


def requirements_key(requirements: Path, python: str) -> str:
    """Cache key of a provider environment: the requirements file and the interpreter's version."""
    version = subprocess.run([python, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    h = hashlib.sha256(requirements.read_bytes())
    h.update(version.encode())
    return h.hexdigest()


def terraform_platform() -> str:
    """Terraform's OS_ARCH name for this machine (``linux_amd64``, ``darwin_arm64``, ...)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{sys.platform.replace('linux2', 'linux')}_{arch}"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: list[str], step: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip()
        raise InstallError(f"{step} failed ({shlex.join(cmd)}):\n{out[-4000:]}")


def ensure_venv(venv: Path, requirements: Path, python: str = sys.executable,
                log: Callable[[str], None] = lambda _: None) -> bool:
    """Create ``venv`` with ``requirements`` installed; returns True if an up-to-date one was reused.

    Safe to call from several processes at once (a lock file beside the venv).
    """
    key = requirements_key(requirements, python)
    with _locked(venv.parent / (venv.name + ".lock")):
        marker = venv / MARKER
        if marker.is_file() and marker.read_text().strip() == key and (venv / "bin" / "python").exists():
            return True
        if venv.exists():
            shutil.rmtree(venv)
        log(f"creating the provider's virtual environment {venv} ...")
        _run([python, "-m", "venv", str(venv)], "creating the virtual environment")
        log(f"installing {requirements} into it ...")
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
              "-r", str(requirements)], "pip install")
        marker.write_text(key + "\n")
        return False


def generate_stubs(venv: Path, out_dir: Path) -> list[Path]:
    """Generate ``spindle/api/*_pb2*.py`` for the provider's protobuf into ``out_dir``."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    root = proto_root()
    missing = [p for p in PROTO_FILES if not (root / p).is_file()]
    if missing:
        raise InstallError(f"proto files not found under {root}: {', '.join(missing)}")
    _run([str(venv / "bin" / "python"), "-m", "grpc_tools.protoc", f"-Ispindle={root}",
          f"--python_out={out_dir}", f"--pyi_out={out_dir}", f"--grpc_python_out={out_dir}",
          *(str(root / p) for p in PROTO_FILES)], "generating gRPC stubs")
    api = out_dir / "spindle" / "api"
    written = []
    for pkg in (out_dir / "spindle", api):
        init = pkg / "__init__.py"
        init.write_text('"""Spindle gRPC stubs generated for the Terraform provider\'s protobuf version."""\n')
        written.append(init)
    written += sorted(api.glob("*_pb2*.py*"))
    return written


def launcher_text(venv: Path, lib_dir: Path, gen_dir: Path) -> str:
    """The ``terraform-provider-spindle`` shell script (absolute paths)."""
    pythonpath = shlex.quote(f"{lib_dir}:{gen_dir}")
    return (
        "#!/bin/sh\n"
        f"# Spindle Terraform provider {PROVIDER_VERSION}, written by `spindle terraform install-provider`.\n"
        "# Runs the provider from its own virtual environment (the tf framework needs protobuf<6).\n"
        f"PYTHONPATH={pythonpath}\n"
        "PYTHONNOUSERSITE=1\n"
        "# Never import from the working directory (a Spindle checkout has its own controlplane/ there).\n"
        "PYTHONSAFEPATH=1\n"
        "export PYTHONPATH PYTHONNOUSERSITE PYTHONSAFEPATH\n"
        f"exec {shlex.quote(str(venv / 'bin' / 'python'))} -m spindle_tf \"$@\"\n"
    )


def mirror_cli_config(mirror_dir: Path) -> str:
    """CLI configuration: ``terraform init`` installs the provider from the filesystem mirror."""
    return (
        "# Terraform CLI configuration written by `spindle terraform install-provider`.\n"
        f"# export TF_CLI_CONFIG_FILE=<this file>, then `terraform init` installs {PROVIDER_SOURCE}\n"
        "# from the local filesystem mirror; every other provider comes from its registry as usual.\n"
        "provider_installation {\n"
        "  filesystem_mirror {\n"
        f"    path    = \"{mirror_dir}\"\n"
        f"    include = [\"{PROVIDER_HOST}/*/*\"]\n"
        "  }\n"
        "  direct {\n"
        f"    exclude = [\"{PROVIDER_HOST}/*/*\"]\n"
        "  }\n"
        "}\n"
    )


def dev_cli_config(bin_dir: Path) -> str:
    """CLI configuration with dev_overrides: no ``terraform init`` (and init must not be run)."""
    return (
        "# Terraform CLI configuration written by `spindle terraform install-provider` (development mode).\n"
        "# With dev_overrides, run plan/apply directly: do NOT run `terraform init` for the spindle provider.\n"
        "provider_installation {\n"
        "  dev_overrides {\n"
        f"    \"{PROVIDER_SOURCE}\" = \"{bin_dir}\"\n"
        "  }\n"
        "  direct {}\n"
        "}\n"
    )


def install_provider(dest: Path, *, venv: Path | None = None, python: str = sys.executable,
                     source: Path | None = None, log: Callable[[str], None] = lambda _: None) -> InstallResult:
    """Install the provider under ``dest`` (the venv may live elsewhere, e.g. a shared cache)."""
    dest = dest.expanduser().resolve()
    source = (source or default_provider_source()).resolve()
    requirements = source / "requirements.txt"
    package = source / "spindle_tf"
    if not requirements.is_file() or not (package / "__init__.py").is_file():
        raise InstallError(
            f"provider sources not found in {source} (expected requirements.txt and spindle_tf/); run from a "
            "Spindle source checkout or pass --source DIR"
        )
    venv = (venv or dest / "venv").expanduser().resolve()
    reused = ensure_venv(venv, requirements, python, log)

    written: list[Path] = []
    gen_dir = dest / "gen"
    written += generate_stubs(venv, gen_dir)

    lib_dir = dest / "lib"
    if lib_dir.exists():
        shutil.rmtree(lib_dir)
    shutil.copytree(package, lib_dir / "spindle_tf", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    written += sorted((lib_dir / "spindle_tf").glob("*.py"))

    bin_dir = dest / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / LAUNCHER_NAME
    text = launcher_text(venv, lib_dir, gen_dir)
    launcher.write_text(text)
    launcher.chmod(0o755)
    written.append(launcher)

    mirror_dir = dest / "mirror"
    if mirror_dir.exists():
        shutil.rmtree(mirror_dir)
    platform_dir = mirror_dir / PROVIDER_HOST / PROVIDER_NAMESPACE / PROVIDER_TYPE / PROVIDER_VERSION
    mirror_binary = platform_dir / terraform_platform() / f"{LAUNCHER_NAME}_v{PROVIDER_VERSION}"
    mirror_binary.parent.mkdir(parents=True)
    mirror_binary.write_text(text)
    mirror_binary.chmod(0o755)
    written.append(mirror_binary)

    cli_config = dest / "terraformrc"
    cli_config.write_text(mirror_cli_config(mirror_dir))
    dev_config = dest / "dev.tfrc"
    dev_config.write_text(dev_cli_config(bin_dir))
    written += [cli_config, dev_config]

    return InstallResult(dir=dest, venv=venv, venv_reused=reused, gen_dir=gen_dir, lib_dir=lib_dir,
                         launcher=launcher, mirror_dir=mirror_dir, mirror_binary=mirror_binary,
                         cli_config=cli_config, dev_cli_config=dev_config, written=written)
