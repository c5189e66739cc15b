"""The ``spindle`` provider: connection settings, diagnostics helpers, resource and data source lists."""

from __future__ import annotations

import os

from typing import Any, Mapping, Optional, Type

from tf import schema, types
from tf.iface import Config, DataSource, Resource
from tf.provider import Provider
from tf.utils import Diagnostics

from . import PROVIDER_SOURCE
from .diagnostics import is_unknown, report
from .validation import check_provider_config

#: Provider attribute -> environment variable used when the attribute is unset.
ENV_VARS = {
    "address": "SPINDLE_ADDRESS",
    "namespace": "SPINDLE_NAMESPACE",
    "api_key": "SPINDLE_API_KEY",
    "tls": "SPINDLE_TLS",
    "tls_ca_file": "SPINDLE_TLS_CA_FILE",
    "tls_cert_file": "SPINDLE_TLS_CERT_FILE",
    "tls_key_file": "SPINDLE_TLS_KEY_FILE",
    "tls_server_name": "SPINDLE_TLS_SERVER_NAME",
    "tls_insecure_skip_verify": "SPINDLE_TLS_INSECURE_SKIP_VERIFY",
    "timeout_seconds": "SPINDLE_TIMEOUT_SECONDS",
}
_BOOL_ATTRS = {"tls", "tls_insecure_skip_verify"}
DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"


def _env_value(attr: str, environ: Mapping[str, str]) -> Any:
    raw = environ.get(ENV_VARS[attr])
    if raw is None or raw == "":
        return None
    if attr in _BOOL_ATTRS:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if attr == "timeout_seconds":
        try:
            return float(raw)
        except ValueError:
            return raw  # reported as invalid by check_provider_config
    return raw


def effective_config(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The provider block's values, with SPINDLE_* environment variables filling the unset ones."""
    environ = os.environ if environ is None else environ
    out = {k: config.get(k) for k in ENV_VARS}
    for attr in ENV_VARS:
        if out[attr] is None:
            out[attr] = _env_value(attr, environ)
    return out


class SpindleProvider(Provider):
    """Terraform provider for Spindle (``spindle_namespace``, ``spindle_api_key``, ``spindle_schedule`` and two data sources)."""

    def __init__(self) -> None:
        self.connection: Any = None  # a SpindleConnection once configured (import deferred: it loads the stubs)
        self.default_namespace: str = DEFAULT_NAMESPACE
        self.address: str = DEFAULT_ADDRESS
        self.configure_error: Optional[str] = None

    def get_model_prefix(self) -> str:
        """Resource and data source type names start with ``spindle_``."""
        return "spindle_"

    def full_name(self) -> str:
        """The provider's source address."""
        return PROVIDER_SOURCE

    def get_provider_schema(self, diags: Diagnostics) -> schema.Schema:
        """The ``provider "spindle" {}`` block."""
        S, B, N = types.String(), types.Bool(), types.Number()
        return schema.Schema(
            version=0,
            description="Manages namespaces and API keys of a Spindle control plane over gRPC.",
            attributes=[
                schema.Attribute("address", S, optional=True,
                                 description="Frontend address, HOST:PORT. Env: `SPINDLE_ADDRESS`. Default "
                                             f"`{DEFAULT_ADDRESS}`."),
                schema.Attribute("namespace", S, optional=True,
                                 description="Default namespace for the `spindle_namespace` data source. Env: "
                                             f"`SPINDLE_NAMESPACE`. Default `{DEFAULT_NAMESPACE}`."),
                schema.Attribute("api_key", S, optional=True, sensitive=True,
                                 description="Sent as `authorization: Bearer KEY` on every call. Env: "
                                             "`SPINDLE_API_KEY`. Use TLS for anything but localhost."),
                schema.Attribute("tls", B, optional=True,
                                 description="Connect with TLS (implied by any other `tls_*` setting). Env: "
                                             "`SPINDLE_TLS`."),
                schema.Attribute("tls_ca_file", S, optional=True,
                                 description="PEM file of the CA that signed the server certificate (default: "
                                             "system roots). Env: `SPINDLE_TLS_CA_FILE`."),
                schema.Attribute("tls_cert_file", S, optional=True,
                                 description="Client certificate (PEM) for mutual TLS; needs `tls_key_file`. Env: "
                                             "`SPINDLE_TLS_CERT_FILE`."),
                schema.Attribute("tls_key_file", S, optional=True,
                                 description="Client private key (PEM) for mutual TLS. Env: `SPINDLE_TLS_KEY_FILE`."),
                schema.Attribute("tls_server_name", S, optional=True,
                                 description="Name to verify the server certificate against, when it differs "
                                             "from the address's host. Env: `SPINDLE_TLS_SERVER_NAME`."),
                schema.Attribute("tls_insecure_skip_verify", B, optional=True,
                                 description="Trust whatever certificate the server presents (self-signed "
                                             "development certificates only; never in production). Env: "
                                             "`SPINDLE_TLS_INSECURE_SKIP_VERIFY`."),
                schema.Attribute("timeout_seconds", N, optional=True,
                                 description="Deadline of each call to the server. Env: `SPINDLE_TIMEOUT_SECONDS`. "
                                             "Default 10."),
            ],
        )

    def validate_config(self, diags: Diagnostics, config: Config) -> None:
        """Check the provider block as written (environment values are checked at configure time)."""
        report(diags, check_provider_config(config, is_unknown))

    def configure_provider(self, diags: Diagnostics, config: Config) -> None:
        """Resolve settings (block, then environment, then defaults), connect, and check the server answers."""
        from .client import ConnectionSettings, SpindleConnection, SpindleError

        if any(is_unknown(v) for v in config.values()):
            self.configure_error = ("The provider configuration depends on values not known until apply; the "
                                    "Spindle server cannot be reached during this plan.")
            return
        eff = effective_config(config)
        problems = check_provider_config(eff, is_unknown, check_files=True)
        if problems:
            report(diags, problems)
            self.configure_error = "The provider configuration is invalid."
            return
        self.default_namespace = eff["namespace"] or DEFAULT_NAMESPACE
        self.address = eff["address"] or DEFAULT_ADDRESS
        settings = ConnectionSettings(
            address=self.address,
            api_key=eff["api_key"] or None,
            tls=bool(eff["tls"]),
            tls_ca_file=eff["tls_ca_file"] or None,
            tls_cert_file=eff["tls_cert_file"] or None,
            tls_key_file=eff["tls_key_file"] or None,
            tls_server_name=eff["tls_server_name"] or None,
            tls_insecure_skip_verify=bool(eff["tls_insecure_skip_verify"]),
            timeout_seconds=float(eff["timeout_seconds"] or 10.0),
        )
        try:
            conn = SpindleConnection(settings)
            conn.check()
        except SpindleError as e:
            attr = "api_key" if e.code.name == "UNAUTHENTICATED" else "address"
            self.configure_error = e.describe()
            diags.add_error(f"Cannot connect to Spindle at {self.address}", e.describe(), path=[attr])
            return
        except OSError as e:  # certificate files, or fetching the certificate for tls_insecure_skip_verify
            self.configure_error = str(e)
            diags.add_error(f"Cannot set up TLS to Spindle at {self.address}", f"{type(e).__name__}: {e}",
                            path=["address"])
            return
        self.connection = conn
        self.configure_error = None

    def require_connection(self, diags: Diagnostics) -> Any:
        """The configured connection, or None after adding a diagnostic that says why there is none."""
        if self.connection is None:
            diags.add_error("The Spindle provider is not connected",
                            self.configure_error or "The provider was not configured.")
        return self.connection

    def get_data_sources(self) -> list[Type[DataSource]]:
        """``spindle_namespace`` and ``spindle_namespaces``."""
        from .data_sources import NamespaceDataSource, NamespacesDataSource

        return [NamespaceDataSource, NamespacesDataSource]

    def get_resources(self) -> list[Type[Resource]]:
        """``spindle_namespace`` and ``spindle_api_key``."""
        from .api_keys import ApiKeyResource
        from .resources import NamespaceResource
        from .schedules import ScheduleResource

        return [NamespaceResource, ApiKeyResource, ScheduleResource]

