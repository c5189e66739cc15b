"""Helpers for the Terraform tests: the provider install, a dev server, terraform runs, raw API checks."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from spindle_procs import SPINDLE, DevServer  # noqa: F401 - re-exported for the tests here

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
MS_PER_DAY = 86_400_000


def cache_dir() -> Path:
    """Where the provider's virtual environment is cached across sessions."""
    if os.environ.get("SPINDLE_TF_CACHE"):
        return Path(os.environ["SPINDLE_TF_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "spindle-tf"


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    """Checks through Spindle's own gRPC API (the committed stubs of the main environment)."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = service_pb2_grpc.WorkflowServiceStub(self.channel)

    def describe(self, name: str) -> Any:
        """NamespaceInfo, or None when there is no such namespace."""
        try:
            return self.stub.DescribeNamespace(svc.DescribeNamespaceRequest(name=name), timeout=10).namespace_info
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise

    def names(self) -> set[str]:
        return {n.name for n in self.stub.ListNamespaces(svc.ListNamespacesRequest(page_size=1000), timeout=10).namespaces}

    def update(self, name: str, mask: list[str], **fields: Any) -> Any:
        req = svc.UpdateNamespaceRequest(name=name, update_mask=mask, **fields)
        return self.stub.UpdateNamespace(req, timeout=10).namespace_info

    def create(self, name: str, **fields: Any) -> Any:
        return self.stub.CreateNamespace(svc.CreateNamespaceRequest(name=name, **fields), timeout=10).namespace_info

    def delete(self, name: str, force: bool = False) -> None:
        self.stub.DeleteNamespace(svc.DeleteNamespaceRequest(name=name, force=force), timeout=10)

    def start_workflow(self, namespace: str, workflow_id: str) -> str:
        """A run that stays RUNNING (no worker polls its task queue)."""
        req = svc.StartWorkflowExecutionRequest(namespace=namespace, workflow_id=workflow_id, workflow_type="Idle",
                                                task_queue="nobody-polls", request_id=workflow_id)
        return self.stub.StartWorkflowExecution(req, timeout=10).run_id

    def close(self) -> None:
        self.channel.close()


def search_attribute_names(info: Any) -> dict[str, str]:
    """NamespaceInfo.search_attributes as name -> type name (``Keyword``, ...)."""
    names = {svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD: "Keyword", svc.SEARCH_ATTRIBUTE_TYPE_TEXT: "Text",
             svc.SEARCH_ATTRIBUTE_TYPE_INT: "Int", svc.SEARCH_ATTRIBUTE_TYPE_DOUBLE: "Double",
             svc.SEARCH_ATTRIBUTE_TYPE_BOOL: "Bool", svc.SEARCH_ATTRIBUTE_TYPE_DATETIME: "Datetime",
             svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST: "KeywordList"}
    return {k: names[v] for k, v in info.search_attributes.items()}


@dataclass
class Installed:
    """The session's provider installation (``spindle terraform install-provider`` output and paths)."""

    dir: Path
    venv: Path
    cli_config: Path
    dev_cli_config: Path
    stdout: str
    seconds: float


@dataclass
class Result:
    rc: int
    out: str  # stdout and stderr, no colour

    @property
    def flat(self) -> str:
        """Output with line breaks and box-drawing margins squashed, for substring checks on wrapped text."""
        text = re.sub(r"[│╷╵]", " ", self.out)
        return re.sub(r"\s+", " ", text)


class Terraform:
    """terraform in one working directory, with our own CLI configuration and a private HOME."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        workdir.mkdir(parents=True, exist_ok=True)

    def write(self, text: str, name: str = "main.tf") -> None:
        (self.workdir / name).write_text(text)

    def run(self, *args: str, expect: int | tuple[int, ...] | None = 0, extra_env: dict[str, str] | None = None,
            timeout: float = 120) -> Result:
        cmd = [shutil.which("terraform") or "terraform", *args]
        if args and args[0] in {"init", "plan", "apply", "destroy", "import", "validate", "output", "refresh"}:
            cmd.insert(2, "-no-color")
        proc = subprocess.run(cmd, cwd=self.workdir, env={**self.env, **(extra_env or {})}, capture_output=True,
                              text=True, timeout=timeout)
        res = Result(proc.returncode, proc.stdout + proc.stderr)
        if expect is not None:
            expected = (expect,) if isinstance(expect, int) else expect
            assert res.rc in expected, f"terraform {' '.join(args)}: exit {res.rc}, expected {expected}\n{res.out}"
        return res


def terraform_env(cli_config: Path, home: Path) -> dict[str, str]:
    """The environment for terraform: our CLI config, no checkpoint calls, no SPINDLE_* leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "SPINDLE_"))}
    env.update({
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        # The tf framework caches its plugin certificate under ~/.cache; keep that out of the real HOME.
        "HOME": str(home),
    })
    return env


def provider_block(address: str, extra: str = "") -> str:
    """terraform + provider blocks for the spindle provider at ``address``."""
    return (
        'terraform {\n  required_providers {\n    spindle = { source = "spindle.local/spindle/spindle" }\n  }\n}\n'
        f'provider "spindle" {{\n  address = "{address}"\n{extra}}}\n'
    )


def self_signed_certificate(dns_name: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for ``dns_name`` only; the certificate is its own CA."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, dns_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class TlsAuthProxy:
    """A TLS gRPC front for a plaintext Spindle server that requires ``authorization: Bearer <api_key>``.

    It forwards every unary call as raw bytes, so it stands in for a TLS-terminating,
    API-key-checking gateway in front of the control plane.
    """

    def __init__(self, upstream: str, cert_pem: bytes, key_pem: bytes, api_key: str) -> None:
        from concurrent import futures

        self.upstream = grpc.insecure_channel(upstream)
        self.api_key = api_key
        self.calls: list[tuple[str, str | None]] = []
        proxy = self

        class Forward(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                method = details.method
                auth = dict(details.invocation_metadata).get("authorization")

                def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
                    proxy.calls.append((method, auth))
                    if auth != f"Bearer {proxy.api_key}":
                        context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid API key")
                    try:
                        return proxy.upstream.unary_unary(method)(request, timeout=10)  # type: ignore[no-any-return]
                    except grpc.RpcError as e:
                        context.abort(e.code(), e.details())
                        raise

                return grpc.unary_unary_rpc_method_handler(unary)

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[Forward()])
        creds = grpc.ssl_server_credentials([(key_pem, cert_pem)])
        self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        self.server.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.stop(grace=None)
        self.upstream.close()
