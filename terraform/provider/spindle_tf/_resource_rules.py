# Generated from controlplane/_resource_rules.py by python scripts/gen_copies.py: do not edit this copy;
# edit that file and run the script.
"""What the values an operator configures may be: namespaces, search attributes, API keys.

The one definition of these rules. The server checks requests with them
(``spindle.controlplane.namespaces``, ``_field_rules``, ``auth``), and the Terraform
provider checks configurations with them at ``terraform validate`` time, before anything
reaches the server. The provider runs in its own virtual environment with its own
protobuf and cannot import the control plane, so it reads a copy of this file,
``terraform/provider/spindle_tf/_resource_rules.py``, written by
``python scripts/gen_copies.py`` (``tests/packaging/test_generated_copies.py`` fails while
the copy is not current); the installer ships it with the provider.

So this module imports nothing but the standard library. It holds the rules, not the
messages: the server's errors name the request field, the provider's are Terraform
diagnostics.
"""

from __future__ import annotations

import math
import re

#: A namespace name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.
NAMESPACE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

#: A custom search attribute name: 1-64 letters, digits or '_', not starting with a digit.
SEARCH_ATTRIBUTE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

#: Built-in visibility fields: they cannot be registered as custom search attributes.
BUILTIN_SEARCH_ATTRIBUTES = frozenset(
    {"WorkflowId", "RunId", "WorkflowType", "ExecutionStatus", "TaskQueue", "StartTime", "CloseTime",
     "ExecutionDuration", "HistoryLength"}
)

#: Search attribute type names, in the order of the wire enum ``SearchAttributeType`` (1..7).
SEARCH_ATTRIBUTE_TYPES: tuple[str, ...] = ("Keyword", "Text", "Int", "Double", "Bool", "Datetime", "KeywordList")

#: A namespace's archival URI: Google Cloud Storage (gs://BUCKET/PREFIX) or a local directory (file:///PATH).
ARCHIVAL_URI_RE = re.compile(r"^(gs|file)://.+")

MS_PER_DAY = 86_400_000
#: Longest duration any ``*_ms`` field may hold: 100 years (``now + duration`` stays a valid timestamp in every store).
MAX_DURATION_MS = 100 * 365 * MS_PER_DAY
#: Longest retention in whole days (a retention is a duration).
MAX_RETENTION_DAYS = MAX_DURATION_MS // MS_PER_DAY

#: Roles a key (or certificate) can hold on a namespace.
ROLES: tuple[str, ...] = ("reader", "worker", "writer", "admin")

#: Longest API key name, in characters.
API_KEY_NAME_MAX_LENGTH = 200


#: A Nexus endpoint name (Temporal's rule): 1-200 letters, digits, '_' or '-', not starting with a digit or '-'.
NEXUS_ENDPOINT_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,199}$")

#: Most namespaces a Nexus endpoint may list in allowed_caller_namespaces.
NEXUS_ENDPOINT_MAX_ALLOWED_CALLERS = 100

#: Largest Nexus endpoint description, bytes of its payload data.
NEXUS_ENDPOINT_DESCRIPTION_MAX_BYTES = 4096


def is_rate(value: float) -> bool:
    """A rate (``rps_limit``, tasks per second): a finite number, 0 or more."""
    return math.isfinite(value) and value >= 0


def raises_rate(current: float, new: float) -> bool:
    """Whether the rate limit ``new`` allows more than ``current`` (both ``is_rate``; 0 = unlimited, the most).

    Limits are the operator's: only a system admin may raise one; a namespace admin may
    lower it (a value more than 0 and at most the current one) or leave it as it is.
    """
    if current == 0:
        return False  # nothing allows more than unlimited
    return new == 0 or new > current


__all__ = ["API_KEY_NAME_MAX_LENGTH", "ARCHIVAL_URI_RE", "BUILTIN_SEARCH_ATTRIBUTES", "MAX_DURATION_MS",
           "NEXUS_ENDPOINT_DESCRIPTION_MAX_BYTES", "NEXUS_ENDPOINT_MAX_ALLOWED_CALLERS", "NEXUS_ENDPOINT_NAME_RE",
           "MAX_RETENTION_DAYS", "MS_PER_DAY", "NAMESPACE_NAME_RE", "ROLES", "SEARCH_ATTRIBUTE_NAME_RE",
           "SEARCH_ATTRIBUTE_TYPES", "is_rate", "raises_rate"]
