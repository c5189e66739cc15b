#!/usr/bin/env python3
"""Probe a Spindle control plane's ``grpc.health.v1.Health`` service; exit 0 when SERVING.

Used by the container image's ``HEALTHCHECK`` (installed as ``/usr/local/bin/spindle-healthcheck``)
and by the GKE module's readiness/liveness probes. Kubernetes' built-in gRPC probe cannot speak
TLS, and the public port serves TLS in a real deployment, hence this script.

Settings (environment variables, all optional):

- ``SPINDLE_HEALTHCHECK_ADDRESS``: ``HOST:PORT`` of the public listener (default ``127.0.0.1:7233``).
- ``SPINDLE_HEALTHCHECK_SERVICE``: the service name asked about (default ``""``: the whole server;
  the server also reports ``spindle.v1.WorkflowService``).
- ``SPINDLE_HEALTHCHECK_CA_FILE``: PEM CA that signed the server certificate: connect with TLS.
- ``SPINDLE_HEALTHCHECK_SERVER_NAME``: the name the certificate is checked against (with TLS; the
  certificate's DNS name, since the probe dials 127.0.0.1).
- ``SPINDLE_HEALTHCHECK_CERT_FILE`` / ``SPINDLE_HEALTHCHECK_KEY_FILE``: a client certificate, when
  the server requires one (mutual TLS).
- ``SPINDLE_HEALTHCHECK_TIMEOUT``: seconds (default 3).

Exit status: 0 SERVING; 1 NOT_SERVING, unreachable, or any error (one line on stderr says which).
The health service is not behind the server's authorizer: no API key is needed.
"""

from __future__ import annotations

import os
import sys

from collections.abc import Mapping


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def check(env: Mapping[str, str] = os.environ) -> tuple[bool, str]:
    """Ask the health service once. Returns (serving, a one-line explanation)."""
    import grpc

    from grpc_health.v1 import health_pb2, health_pb2_grpc

    address = env.get("SPINDLE_HEALTHCHECK_ADDRESS") or "127.0.0.1:7233"
    service = env.get("SPINDLE_HEALTHCHECK_SERVICE", "")
    timeout = float(env.get("SPINDLE_HEALTHCHECK_TIMEOUT") or 3)
    ca = env.get("SPINDLE_HEALTHCHECK_CA_FILE")
    if ca:
        cert, key = env.get("SPINDLE_HEALTHCHECK_CERT_FILE"), env.get("SPINDLE_HEALTHCHECK_KEY_FILE")
        creds = grpc.ssl_channel_credentials(_read(ca), _read(key) if key else None, _read(cert) if cert else None)
        options = []
        if env.get("SPINDLE_HEALTHCHECK_SERVER_NAME"):
            options.append(("grpc.ssl_target_name_override", env["SPINDLE_HEALTHCHECK_SERVER_NAME"]))
        channel = grpc.secure_channel(address, creds, options=options)
    else:
        channel = grpc.insecure_channel(address)
    with channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                             timeout=timeout)
        except grpc.RpcError as e:
            return False, f"{address}: {e.code().name}: {e.details()}"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    return resp.status == health_pb2.HealthCheckResponse.SERVING, f"{address}: {status}"


def main() -> int:
    try:
        ok, line = check()
    except Exception as e:  # noqa: BLE001 - a probe reports, it never raises
        ok, line = False, f"health check failed: {type(e).__name__}: {e}"
    print(line, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
