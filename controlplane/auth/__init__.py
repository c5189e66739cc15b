"""Identity and access: principals and their roles, API keys, the RPC policy, the authorizer, the audit log.

See docs/SECURITY.md for the model. The pieces:

- ``_roles``: the four namespace roles (reader, worker, writer, admin) and what each allows.
- ``_principal``: :class:`Principal` (an API key or a certificate subject, its grants,
  ``system_admin``) and the current principal of a call.
- ``_rpc_policy``: every RPC mapped to the role and namespace it needs.
- ``_keys``: API key secrets, their keyed hash, lookups with a bounded cache.
- ``_task_queues``: worker keys confined to task queues (the list's rule, the check of worker calls).
- ``_key_admin``: the CreateApiKey / ListApiKeys / RevokeApiKey RPCs.
- ``_authorizer``: :class:`Authorizer`, resolving credentials and applying the policy.
- ``_audit``: one structured line per admin action (logger ``spindle.audit``).
- ``_settings``: the ``auth:`` section of the server configuration.
- ``_bootstrap``: the first admin key of a configured server; the warning for an open one.
"""

from ._audit import enable as enable_audit_log
from ._audit import record as audit
from ._authorizer import Authorizer, require_permission
from ._bootstrap import bootstrap_admin_key, open_listener_warning
from ._key_admin import ApiKeyAdmin
from ._keys import ApiKeys, format_secret, new_secret, parse_secret
from ._principal import ANONYMOUS, Principal, current_principal
from ._roles import Permission, Role
from ._rpc_policy import POLICY, SERVICE_RPCS, Scope, rule_for
from ._settings import AuthSettings, parse_auth_section

__all__ = ["ANONYMOUS", "ApiKeyAdmin", "ApiKeys", "AuthSettings", "Authorizer", "POLICY", "Permission", "Principal",
           "Role", "SERVICE_RPCS", "Scope", "audit", "bootstrap_admin_key", "open_listener_warning", "current_principal", "enable_audit_log", "format_secret",
           "new_secret", "parse_auth_section", "parse_secret", "require_permission", "rule_for"]
