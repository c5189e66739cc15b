"""Input validation for the provider, done at ``terraform validate``/``plan`` time.

Everything here is pure Python (no ``tf``, no protobuf), so it runs before any
request reaches the server and nothing is half-created when one resource of many
is wrong. The rules themselves (patterns, built-in names, types, limits) are the
control plane's: ``_resource_rules`` is a generated copy of
``controlplane/_resource_rules.py`` (``python scripts/gen_copies.py``), so the provider
refuses at plan time what the server would refuse at apply. The messages are the
provider's own (Terraform diagnostics).

Values that Terraform does not know yet (``Unknown``) are skipped: callers pass an
``is_unknown`` predicate so that this module does not depend on ``tf``.
"""

from __future__ import annotations

import os
import re

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, Union

from ._resource_rules import (
    ARCHIVAL_URI_RE,
    BUILTIN_SEARCH_ATTRIBUTES,
    MAX_RETENTION_DAYS,
    NAMESPACE_NAME_RE,
    SEARCH_ATTRIBUTE_NAME_RE,
    SEARCH_ATTRIBUTE_TYPES,
    is_rate,
)

#: An attribute path as the ``tf`` framework takes it: names, and 1-tuples for map keys.
PathStep = Union[str, tuple[str]]

NAME_RE = NAMESPACE_NAME_RE
ADDRESS_RE = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\s]+):(?P<port>\d{1,5})$")

IsUnknown = Callable[[Any], bool]


def _never_unknown(_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Problem:
    """One invalid input: the attribute path, a one-line summary and a detail."""

    path: list[PathStep]
    summary: str
    detail: str = ""
    warning: bool = False


@dataclass
class Problems:
    """A list of problems with small helpers to add to it."""

    items: list[Problem] = field(default_factory=list)

    def error(self, path: Sequence[PathStep], summary: str, detail: str = "") -> None:
        """Record an error at ``path``."""
        self.items.append(Problem(list(path), summary, detail))

    def warn(self, path: Sequence[PathStep], summary: str, detail: str = "") -> None:
        """Record a warning at ``path``."""
        self.items.append(Problem(list(path), summary, detail, warning=True))

    def __bool__(self) -> bool:
        return any(not p.warning for p in self.items)


def check_name(value: Any, problems: Problems, attribute: str = "name") -> None:
    """A namespace name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit."""
    if value is None:
        return
    if not isinstance(value, str) or not NAME_RE.match(value):
        problems.error(
            [attribute], f"Invalid namespace name {value!r}",
            f"{attribute}: a namespace name has 1-64 characters (letters, digits, '.', '_', '-') and starts with a "
            f"letter or digit; got {value!r}.",
        )


def check_retention_days(value: Any, problems: Problems, attribute: str = "retention_days") -> None:
    """A whole number of days, at least 1."""
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if not ok or not 1 <= value <= MAX_RETENTION_DAYS:
        problems.error(
            [attribute], f"Invalid retention_days {value!r}",
            f"{attribute}: retention is a whole number of days from 1 to {MAX_RETENTION_DAYS}; got {value!r}. "
            "Leave it unset to use the server's default.",
        )


def suggest_type(value: str) -> str | None:
    """The canonical type name that ``value`` spells in another case or with '_' (``keyword_list``)."""
    squashed = value.replace("_", "").replace("-", "").lower()
    for t in SEARCH_ATTRIBUTE_TYPES:
        if t.lower() == squashed:
            return t
    return None


def check_search_attributes(value: Any, problems: Problems, is_unknown: IsUnknown = _never_unknown,
                            attribute: str = "search_attributes") -> None:
    """A map of custom search attribute name to type name (``Keyword``, ``Int``, ...)."""
    if value is None or is_unknown(value):
        return
    if not isinstance(value, Mapping):
        problems.error([attribute], "Invalid search_attributes", f"{attribute}: expected a map of name to type.")
        return
    for name, type_name in value.items():
        path: list[PathStep] = [attribute, (name,)]
        if not SEARCH_ATTRIBUTE_NAME_RE.match(name):
            problems.error(
                path, f"Invalid search attribute name {name!r}",
                f"{attribute}: a search attribute name has 1-64 letters, digits or '_' and does not start with a "
                f"digit; got {name!r}.",
            )
        elif name in BUILTIN_SEARCH_ATTRIBUTES:
            problems.error(
                path, f"Search attribute {name!r} is built in",
                f"{attribute}: {name!r} is a built-in visibility field and cannot be registered. Built-in fields: "
                f"{', '.join(sorted(BUILTIN_SEARCH_ATTRIBUTES))}.",
            )
        if type_name is None or is_unknown(type_name):
            continue
        if type_name not in SEARCH_ATTRIBUTE_TYPES:
            hint = suggest_type(str(type_name))
            did_you_mean = f" Did you mean {hint!r}?" if hint else ""
            problems.error(
                path, f"Unknown search attribute type {type_name!r} for {name!r}",
                f"{attribute}: {name!r} has unknown type {type_name!r}; the types are "
                f"{', '.join(SEARCH_ATTRIBUTE_TYPES)}.{did_you_mean}",
            )


def check_owner_email(value: Any, problems: Problems, attribute: str = "owner_email") -> None:
    """An email address (something with an '@'), or unset."""
    if value is None or value == "":
        return
    if not isinstance(value, str) or "@" not in value or value.startswith("@") or value.endswith("@"):
        problems.error([attribute], f"Invalid owner_email {value!r}", f"{attribute}: {value!r} is not an email address.")


def check_archival_uri(value: Any, problems: Problems, attribute: str = "archival_uri") -> None:
    """A ``gs://bucket/prefix`` or ``file:///path`` URI, or unset."""
    if value is None or value == "":
        return
    if not isinstance(value, str) or not ARCHIVAL_URI_RE.match(value):
        problems.error(
            [attribute], f"Invalid archival_uri {value!r}",
            f"{attribute}: archived histories go to Google Cloud Storage (gs://BUCKET/PREFIX) or a local directory "
            f"(file:///PATH); got {value!r}.",
        )


def check_rps_limit(value: Any, problems: Problems, attribute: str = "rps_limit") -> None:
    """A finite number of requests per second, 0 (unlimited) or more, or unset."""
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and is_rate(value)
    if not ok:
        problems.error([attribute], f"Invalid rps_limit {value!r}",
                       f"{attribute}: requests per second, 0 (unlimited) or a positive number; got {value!r}.")


def check_namespace_config(config: Mapping[str, Any], is_unknown: IsUnknown = _never_unknown) -> Problems:
    """All checks for a ``spindle_namespace`` resource configuration."""
    problems = Problems()

    def known(key: str) -> Any:
        v = config.get(key)
        return None if is_unknown(v) else v

    check_name(known("name"), problems)
    check_retention_days(known("retention_days"), problems)
    check_search_attributes(config.get("search_attributes"), problems, is_unknown)
    check_owner_email(known("owner_email"), problems)
    check_archival_uri(known("archival_uri"), problems)
    check_rps_limit(known("rps_limit"), problems)
    return problems


def check_search_attribute_changes(prior: Mapping[str, str] | None, planned: Mapping[str, str] | None,
                                   problems: Problems, attribute: str = "search_attributes") -> None:
    """Spindle only adds search attributes: removing one or changing its type is refused at plan time."""
    prior = prior or {}
    planned = planned or {}
    removed = sorted(set(prior) - set(planned))
    if removed:
        problems.error(
            [attribute], "Search attributes cannot be removed",
            f"{attribute}: Spindle does not remove registered search attributes (existing executions may carry "
            f"them); {', '.join(map(repr, removed))} would be removed. Keep them in the configuration. If they were "
            "added outside Terraform, add them to the configuration.",
        )
    for name in sorted(set(prior) & set(planned)):
        if prior[name] != planned[name]:
            problems.error(
                [attribute, (name,)], f"Search attribute {name!r} cannot change type",
                f"{attribute}: {name!r} is registered as {prior[name]}; its type cannot change to {planned[name]}. "
                "Register a new attribute under another name instead.",
            )


def check_address(value: Any, problems: Problems, attribute: str = "address") -> None:
    """``host:port`` with a port from 1 to 65535 (IPv6 hosts in brackets)."""
    if value is None:
        return
    m = ADDRESS_RE.match(value) if isinstance(value, str) else None
    if m is None or not 1 <= int(m.group("port")) <= 65535:
        problems.error(
            [attribute], f"Invalid address {value!r}",
            f"{attribute}: the Spindle frontend address is HOST:PORT (for example 127.0.0.1:7233); got {value!r}.",
        )


def check_provider_config(config: Mapping[str, Any], is_unknown: IsUnknown = _never_unknown,
                          check_files: bool = False) -> Problems:
    """Checks for the provider block (values from the environment are checked at configure time)."""
    problems = Problems()

    def known(key: str) -> Any:
        v = config.get(key)
        return None if is_unknown(v) else v

    check_address(known("address"), problems)
    namespace = known("namespace")
    if namespace is not None:
        check_name(namespace, problems, "namespace")
    timeout = known("timeout_seconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        problems.error(["timeout_seconds"], f"Invalid timeout_seconds {timeout!r}",
                       f"timeout_seconds: must be a positive number of seconds; got {timeout!r}.")
    cert, key = known("tls_cert_file"), known("tls_key_file")
    if (cert is None) != (key is None) and not (is_unknown(config.get("tls_cert_file"))
                                                or is_unknown(config.get("tls_key_file"))):
        missing = "tls_key_file" if key is None else "tls_cert_file"
        problems.error([missing], f"{missing} is required with {'tls_cert_file' if key is None else 'tls_key_file'}",
                       f"{missing}: a client certificate (mutual TLS) needs both tls_cert_file and tls_key_file.")
    if known("tls_insecure_skip_verify") and known("tls_ca_file"):
        problems.error(["tls_insecure_skip_verify"], "tls_insecure_skip_verify conflicts with tls_ca_file",
                       "tls_insecure_skip_verify: set either a CA file to verify the server with, or skip "
                       "verification, not both.")
    if check_files:
        for attr in ("tls_ca_file", "tls_cert_file", "tls_key_file"):
            path = known(attr)
            if path and not os.path.isfile(path):
                problems.error([attr], f"{attr}: file not found", f"{attr}: {path!r} does not exist or is not a file.")
    return problems


__all__ = ["ARCHIVAL_URI_RE", "BUILTIN_SEARCH_ATTRIBUTES", "MAX_RETENTION_DAYS", "NAME_RE", "SEARCH_ATTRIBUTE_NAME_RE",
           "SEARCH_ATTRIBUTE_TYPES", "Problem", "Problems", "check_address", "check_archival_uri", "check_name",
           "check_namespace_config", "check_owner_email", "check_provider_config", "check_retention_days",
           "check_rps_limit", "check_search_attribute_changes", "check_search_attributes", "suggest_type"]
