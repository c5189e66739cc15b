"""Helpers of tests/deploy: the repository's Dockerfile as instructions, the example cluster configuration.

(Named uniquely: test folders have no ``__init__.py`` and share one module namespace.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


@dataclass
class Instruction:
    """One Dockerfile instruction: ``keyword`` upper-cased, ``args`` the raw text after it (continuations joined)."""

    keyword: str
    args: str
    line: int

    def exec_form(self) -> list[str]:
        """The JSON (exec) form's list; AssertionError when the instruction uses the shell form."""
        value = json.loads(self.args)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), \
            f"line {self.line}: {self.keyword} must use the exec (JSON list) form, got {self.args!r}"
        return value


@dataclass
class Stage:
    """A build stage: its ``FROM`` image, name, and its instructions."""

    image: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages) of a Dockerfile: comments dropped, ``\\`` continuations joined."""
    instructions: list[Instruction] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = n
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, args = whole.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
    assert not pending, "the Dockerfile ends in a line continuation"
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            m = re.match(r"^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", ins.args, re.IGNORECASE)
            assert m, f"line {ins.line}: cannot read FROM {ins.args!r}"
            image = re.sub(r"\$\{(\w+)\}", lambda v: args.get(v.group(1), v.group(0)), m.group(1))
            stages.append(Stage(image=image, name=m.group(2) or str(len(stages))))
        elif not stages:
            assert ins.keyword == "ARG", f"line {ins.line}: only ARG may come before the first FROM"
            name, _, default = ins.args.partition("=")
            args[name.strip()] = default.strip()
        else:
            stages[-1].instructions.append(ins)
    return args, stages


def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def healthcheck_command(stage: Stage) -> list[str]:
    """The HEALTHCHECK's ``CMD`` (exec form) of ``stage``."""
    (hc,) = stage.all("HEALTHCHECK")
    m = re.search(r"\bCMD\s+(\[.*\])\s*$", hc.args)
    assert m, f"line {hc.line}: HEALTHCHECK must end in CMD [\"...\"] (exec form), got {hc.args!r}"
    return json.loads(m.group(1))


def copies(stage: Stage) -> list[tuple[list[str], str, dict[str, str]]]:
    """Each COPY of ``stage`` as (sources, destination, flags)."""
    out = []
    for ins in stage.all("COPY"):
        words = shlex.split(ins.args)
        flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
        paths = [w for w in words if not w.startswith("--")]
        out.append((paths[:-1], paths[-1], flags))
    return out


def example_cluster_config() -> dict[str, Any]:
    """The example of ``spindle server start --config`` in spindle.controlplane.cluster._config's docstring."""
    import textwrap

    import yaml

    from spindle.controlplane.cluster import _config

    doc = _config.__doc__ or ""
    m = re.search(r"Example::\n\n(.*?)\n\n\S", doc, re.DOTALL)
    assert m, "the cluster configuration's docstring has no 'Example::' block"
    return yaml.safe_load(textwrap.dedent(m.group(1)))


def port_of(hostport: str) -> int:
    return int(str(hostport).rpartition(":")[2])


# ---------------------------------------------------------------- terraform/modules/gcp-gke-control-plane

MODULE = REPO / "terraform" / "modules" / "gcp-gke-control-plane"
HEALTHCHECK_SCRIPT = REPO / "deploy" / "healthcheck.py"
#: ServerConfig fields the module sets from variables of their own, not through server_settings.
SET_BY_MODULE = {"num_shards": "num_shards", "archive_uri": "archive_uri", "blob_store_uri": "blob_store_uri",
                 "archival_allowed_roots": "archival_allowed_roots"}
OUTPUTS = ("server_config_yaml", "ports", "render_config_command", "server_args", "healthcheck_env", "secrets_dir",
           "secret_files", "config_template_dir", "config_dir", "server_config")
TFVARS = {
    "project_id": "acme-prod", "region": "europe-west1", "spanner_instance": "spindle-spanner",
    "spanner_database": "spindle", "service_account_email": "spindle-server@acme-prod.iam.gserviceaccount.com",
    "image": "europe-west1-docker.pkg.dev/acme-prod/spindle/spindle:0.1.0", "public_hostname": "spindle.acme.internal",
    "archive_uri": "gs://spindle-archive-acme-prod/archive", "blob_store_uri": "gs://spindle-archive-acme-prod/blobs",
    "archival_allowed_roots": ["gs://spindle-archive-acme-prod/tenants"], "num_shards": 32,
    "namespaces": ["default", "orders"], "server_settings": {"long_poll_timeout": 30, "max_long_polls": 5000},
}


def terraform_bin() -> str:
    path = shutil.which("terraform")
    if path is None:
        pytest.skip("terraform is not on PATH")
    return path


def evaluate(work: Path, tfvars: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """``terraform apply`` of config.tf + variables.tf alone (no providers) with ``tfvars``."""
    work.mkdir(parents=True, exist_ok=True)
    for name in ("config.tf", "variables.tf"):
        shutil.copy(MODULE / name, work / name)
    (work / "out.tf").write_text("".join(f'output "{o}" {{ value = local.{o} }}\n' for o in OUTPUTS))
    (work / "test.auto.tfvars.json").write_text(json.dumps(tfvars))
    (work / "empty.tfrc").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "SPINDLE_"))}
    env.update({"TF_CLI_CONFIG_FILE": str(work / "empty.tfrc"), "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1",
                "TF_INPUT": "0", "HOME": str(work)})
    tf = terraform_bin()
    proc = subprocess.run([tf, "apply", "-auto-approve", "-no-color"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode == 0:
        out = subprocess.run([tf, "output", "-json"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        proc.stdout = out.stdout
    return proc


def write_secrets(folder: Path, files: dict[str, str], public_hostname: str, member_name: str) -> None:
    """What the platform team puts into Secret Manager (see docs/DEPLOYING_GCP.md), as files."""
    from tls_certs import CertificateAuthority

    from spindle.controlplane.auth._keys import format_secret, new_secret

    public_ca, member_ca = CertificateAuthority("Public CA"), CertificateAuthority("Member CA")
    public = public_ca.issue(public_hostname, dns_names=[public_hostname])
    member = member_ca.issue(member_name, dns_names=[member_name])
    folder.mkdir(parents=True, exist_ok=True)
    contents = {"tls_cert": public.cert, "tls_key": public.key, "tls_ca": public_ca.cert_pem,
                "member_cert": member.cert, "member_key": member.key, "member_ca": member_ca.cert_pem,
                "bootstrap_admin_key": (format_secret(new_secret()) + "\n").encode()}
    assert set(contents) == set(files), f"the module mounts {sorted(files)}; this test writes {sorted(contents)}"
    for key, data in contents.items():
        (folder / files[key]).write_bytes(data)


def render_in_pod(rendered: dict[str, Any], root: Path, pod_name: str) -> Path:
    """Run the init container's command (paths moved under ``root``): the member's config.yaml."""
    template_dir = root / rendered["config_template_dir"].lstrip("/")
    config_dir = root / rendered["config_dir"].lstrip("/")
    secrets_dir = root / rendered["secrets_dir"].lstrip("/")
    template_dir.mkdir(parents=True)
    config_dir.mkdir(parents=True)
    # the ConfigMap's data as mounted, with the secrets' mount point moved under root
    (template_dir / "config.yaml").write_text(rendered["server_config_yaml"].replace(rendered["secrets_dir"],
                                                                                     str(secrets_dir)))
    command = [w.replace(rendered["config_template_dir"], str(template_dir))
               .replace(rendered["config_dir"] + "/", str(config_dir) + "/") for w in rendered["render_config_command"]]
    proc = subprocess.run(command, env={"POD_NAME": pod_name, "PATH": os.environ["PATH"]}, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return config_dir / "config.yaml"


