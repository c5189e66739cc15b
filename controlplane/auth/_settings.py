"""The ``auth:`` section of the server configuration (``spindle server start --config FILE``).

::

    auth:
      mode: api_keys                 # or: none (anyone who reaches the port may do anything)
      bootstrap_admin_key_file: /run/secrets/spindle-admin-key
      certificate_subjects:          # with mTLS (tls.client_ca_file): certificate subject -> grants
        "CN=orders-worker,O=Acme": {grants: {orders: worker}}
        "CN=ops,O=Acme": {system_admin: true}
      key_cache_ttl: 5s              # how long a member trusts a looked-up key (revocation bound)
      task_token_keys:               # optional; default: one key kept in the store
        - {id: k2, secret_file: /run/secrets/task-token-k2}
      use_store_task_token_key: true # the store-kept key keeps verifying (and signs if none is configured)

``bootstrap_admin_key_file`` holds one API key secret (``spk_...``): the server makes
sure it exists as a ``system_admin`` key at start, so the first administrator can
create the others. If the file does not exist the server generates a key and writes it
there (mode 0600) once. See docs/SECURITY.md.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ._principal import Principal
from ._roles import parse_role

MODES = ("api_keys", "none")
_KNOWN = ("mode", "bootstrap_admin_key_file", "certificate_subjects", "key_cache_ttl", "task_token_keys",
          "use_store_task_token_key")


def normalize_subject(subject: str) -> str:
    """A certificate subject with the spaces around ``,`` and ``=`` removed (``CN=a, O=b`` == ``CN=a,O=b``)."""
    return re.sub(r"\s*([,=])\s*", r"\1", subject.strip())


@dataclass(frozen=True)
class AuthSettings:
    """How a server authenticates callers.

    Attributes:
        mode: ``api_keys`` (every call needs credentials) or ``none`` (open).
        bootstrap_admin_key_file: a file holding a system_admin key to create at start ("" = none).
        certificate_subjects: normalized certificate subject -> the principal it stands for (mTLS).
        key_cache_ttl: seconds a looked-up API key is trusted (bounds how late another member
            sees a revocation).
        task_token_keys: (key id, secret) pairs that sign task tokens, the first one signing.
        use_store_task_token_key: the store-kept token key verifies (and signs when none is configured).
    """

    mode: str = "none"
    bootstrap_admin_key_file: str = ""
    certificate_subjects: Mapping[str, Principal] = field(default_factory=dict)
    key_cache_ttl: float = 5.0
    task_token_keys: tuple[tuple[str, bytes], ...] = ()
    use_store_task_token_key: bool = True

    @property
    def enabled(self) -> bool:
        """Whether calls need credentials."""
        return self.mode == "api_keys"


def _seconds(value: object, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$", str(value))
    if m is None:
        raise ValueError(f"{where}: {value!r} is not a duration (e.g. 5s, 500ms)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[m.group(2)]


def _subjects(raw: object, where: str) -> dict[str, Principal]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping of certificate subject -> {{grants: {{...}}, system_admin: bool}}")
    out: dict[str, Principal] = {}
    for subject, body in raw.items():
        at = f"{where}[{subject!r}]"
        if not isinstance(body, dict) or set(body) - {"grants", "system_admin"}:
            raise ValueError(f"{at}: expected {{grants: {{namespace: role}}, system_admin: bool}}")
        grants_raw = body.get("grants") or {}
        if not isinstance(grants_raw, dict):
            raise ValueError(f"{at}.grants: expected a mapping of namespace -> role")
        grants = {str(ns): parse_role(role, f"{at}.grants[{ns!r}]") for ns, role in grants_raw.items()}
        admin = body.get("system_admin", False)
        if not isinstance(admin, bool):
            raise ValueError(f"{at}.system_admin: expected true or false")
        if not grants and not admin:
            raise ValueError(f"{at}: give grants or system_admin: true (otherwise the certificate can do nothing)")
        key = normalize_subject(str(subject))
        out[key] = Principal(id=f"cert:{key}", name=key, grants=grants, system_admin=admin)
    return out


def _token_keys(raw: object, where: str) -> tuple[tuple[str, bytes], ...]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list of {{id, secret_file}}")
    keys = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, dict) or set(item) != {"id", "secret_file"}:
            raise ValueError(f"{at}: expected {{id: ..., secret_file: ...}}")
        try:
            secret = Path(str(item["secret_file"])).read_bytes().strip()
        except OSError as e:
            raise ValueError(f"{at}.secret_file: cannot read {item['secret_file']}: {e.strerror or e}") from None
        keys.append((str(item["id"]), secret))
    return tuple(keys)


def parse_auth_section(raw: object, *, where: str = "auth",
                       seconds: Callable[[object, str], float] = _seconds) -> AuthSettings:
    """Validate an ``auth:`` mapping; ValueError naming the key otherwise."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, e.g. {{mode: api_keys}} or {{mode: none}}")
    unknown = sorted(set(raw) - set(_KNOWN))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KNOWN)})")
    mode = raw.get("mode")
    if mode not in MODES:
        raise ValueError(f"{where}.mode: expected api_keys or none, got {mode!r}")
    if mode == "none":
        for key in ("bootstrap_admin_key_file", "certificate_subjects"):
            if raw.get(key):
                raise ValueError(f"{where}.{key}: only meaningful with mode: api_keys")
    ttl = seconds(raw.get("key_cache_ttl", 5.0), f"{where}.key_cache_ttl")
    if ttl < 0 or ttl > 300:
        raise ValueError(f"{where}.key_cache_ttl: must be between 0 and 300 seconds, got {ttl}")
    use_store = raw.get("use_store_task_token_key", True)
    if not isinstance(use_store, bool):
        raise ValueError(f"{where}.use_store_task_token_key: expected true or false")
    token_keys = _token_keys(raw.get("task_token_keys") or [], f"{where}.task_token_keys")
    if not token_keys and not use_store:
        raise ValueError(f"{where}.use_store_task_token_key: false needs at least one of task_token_keys")
    from spindle.controlplane.history._tokens import TaskTokens

    try:
        TaskTokens().configure(token_keys, use_store_key=use_store)
    except ValueError as e:
        raise ValueError(f"{where}.task_token_keys: {e}") from None
    return AuthSettings(mode=str(mode), bootstrap_admin_key_file=str(raw.get("bootstrap_admin_key_file") or ""),
                        certificate_subjects=_subjects(raw.get("certificate_subjects") or {},
                                                       f"{where}.certificate_subjects"),
                        key_cache_ttl=ttl, task_token_keys=token_keys, use_store_task_token_key=use_store)


__all__ = ["AuthSettings", "MODES", "normalize_subject", "parse_auth_section"]
