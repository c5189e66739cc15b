"""``spindle terraform install-provider``: install the Spindle Terraform provider for local use.

The installer (``spindle.cli._terraform_install``: the provider's own virtual
environment, its gRPC stubs, a launcher, a filesystem mirror and two Terraform CLI
configuration files) is imported only when the command runs; this module parses the flags
and prints what was written and how to use it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

from pathlib import Path

import click

from spindle.cli import new_group
from spindle.cli._output import OK, fail, note, out

__all__ = ["group"]

group = new_group("terraform", "the Spindle Terraform provider")


@group.command("install-provider",
               short_help="create the provider's virtual environment, launcher, filesystem mirror and CLI config",
               help="Install the Spindle Terraform provider (Python, run from its own virtual environment) for local "
                    "use, and print every file written.")
@click.option("--dir", "dest", help="install directory (default $XDG_DATA_HOME/spindle/terraform, else "
                                    "~/.local/share/spindle/terraform)")
@click.option("--venv", help="where the provider's virtual environment lives (default DIR/venv); reused while its "
                             "requirements are unchanged, so it can be a shared cache")
@click.option("--python", default=sys.executable, show_default=False,
              help="Python (3.11+) to create the virtual environment with (default: this one)")
@click.option("--source", help="provider sources (default: terraform/provider of this checkout)")
def install_provider(dest: str | None, venv: str | None, python: str, source: str | None) -> int:
    from spindle.cli._terraform_install import PROVIDER_SOURCE, PROVIDER_VERSION, InstallError, default_install_dir
    from spindle.cli._terraform_install import install_provider as install

    try:
        res = install(Path(dest) if dest else default_install_dir(), venv=Path(venv) if venv else None,
                      python=python, source=Path(source) if source else None, log=note)
    except InstallError as e:
        fail(str(e))
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"installing the Terraform provider failed: {e}")
    venv_note = "reused: requirements unchanged" if res.venv_reused else "created"
    out(f"Installed the Spindle Terraform provider {PROVIDER_VERSION} ({PROVIDER_SOURCE}) in {res.dir}")
    out(f"  virtual environment ({venv_note}): {res.venv}")
    for p in res.written:
        out(f"  wrote {p}")
    out()
    out("Use it with `terraform init` (filesystem mirror):")
    out(f"  export TF_CLI_CONFIG_FILE={shlex.quote(str(res.cli_config))}")
    out(f"  terraform {{ required_providers {{ spindle = {{ source = \"{PROVIDER_SOURCE}\" }} }} }}")
    out("Or without init (development overrides; do not run `terraform init`):")
    out(f"  export TF_CLI_CONFIG_FILE={shlex.quote(str(res.dev_cli_config))}")
    return OK
