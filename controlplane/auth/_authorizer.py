"""Deciding every call: who is calling (authentication), and may they (authorization).

The gRPC servicer calls :meth:`Authorizer.check` for every RPC before the frontend sees
the request. Order, and why:

1. Credentials. ``authorization: Bearer spk_...`` in the call's metadata names an API
   key; otherwise a client certificate (mTLS) whose subject the configuration maps to
   grants. Bad credentials (malformed, unknown, wrong, revoked, expired) are
   UNAUTHENTICATED even where none would be needed. No credentials at all are
   UNAUTHENTICATED for every RPC but ``GetSystemInfo``.
2. The RPC's rule (``_rpc_policy.POLICY``). For worker answers the task token is
   verified first (a forged one is INVALID_ARGUMENT) to learn its namespace.
3. The grant (and, for a workflow task's commands that act on other namespaces,
   ``writer`` on each of them). A principal without the role gets PERMISSION_DENIED naming the role and
   the namespace. A key whose worker grant is confined to task queues (``_task_queues``)
   gets PERMISSION_DENIED for a poll of, or an answer to a task of, another queue (the
   answer's queue is the one signed into its task token). Nothing about the target (does the namespace or the workflow exist?)
   has been looked up, so neither error tells anything about it.

With ``mode: none`` every caller is :data:`ANONYMOUS` (a system_admin) and credentials
are not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from spindle.controlplane.errors import InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from spindle.controlplane.namespaces import NamespaceRegistry

from ._keys import ApiKeys
from ._principal import ANONYMOUS, Principal
from ._roles import ROLE_FOR, Permission
from ._rpc_policy import Rule, Scope, rule_for
from ._settings import AuthSettings, normalize_subject
from ._task_queues import check_worker_call


class TokenVerifier(Protocol):
    """Verifies a task token (``spindle.controlplane.history._tokens.TaskTokens``)."""

    def verify(self, raw: bytes) -> Any:
        """The token (with ``namespace_id`` and ``task_queue``); raises ValueError for a forged or malformed one."""
        ...


NO_CREDENTIALS = ("no credentials: this server requires an API key (send the metadata 'authorization: Bearer spk_...'; "
                  "Client.connect(..., api_key=...), --api-key or SPINDLE_API_KEY) or a client certificate it knows")


class Authorizer:
    """Authenticates callers and applies the RPC policy.

    Args:
        settings: the ``auth:`` configuration.
        keys: the API keys.
        namespaces: to name a task token's namespace.
        tokens: verifies task tokens.
    """

    def __init__(self, settings: AuthSettings, keys: ApiKeys, namespaces: NamespaceRegistry,
                 tokens: TokenVerifier) -> None:
        self.settings = settings
        self.keys = keys
        self.namespaces = namespaces
        self.tokens = tokens

    @property
    def enabled(self) -> bool:
        """Whether calls need credentials (``mode: api_keys``)."""
        return self.settings.enabled

    @property
    def wants_certificate(self) -> bool:
        """Whether client certificates can name a principal (read the TLS peer's subject)."""
        return self.enabled and bool(self.settings.certificate_subjects)

    async def authenticate(self, metadata: Sequence[tuple[str, Any]] | None, subject: str | None = None
                           ) -> Principal | None:
        """The caller: from its API key, else its certificate subject; None when it sent no credentials.

        Raises:
            Unauthenticated: an ``authorization`` header that is not a valid key, or a
                certificate whose subject the configuration does not know (and no key).
        """
        if not self.enabled:
            return ANONYMOUS
        for key, value in metadata or ():
            if key == "authorization":
                text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
                scheme, _, secret = text.strip().partition(" ")
                if scheme.lower() != "bearer" or not secret.strip():
                    raise Unauthenticated("authorization: expected 'Bearer spk_...'")
                return await self.keys.authenticate(secret.strip())
        if subject:
            principal = self.settings.certificate_subjects.get(normalize_subject(subject))
            if principal is None:
                raise Unauthenticated(f"client certificate {subject!r} is not mapped to any grants "
                                      "(auth.certificate_subjects) and no API key was sent")
            return principal
        return None

    async def authorize(self, rpc: str, request: Any, principal: Principal | None) -> None:
        """Raise unless ``principal`` may make this call.

        Raises:
            Unauthenticated: no principal and the RPC is not public.
            PermissionDenied: the principal lacks the role (the message names it and the namespace).
            InvalidArgument: a worker answer's task token is forged or malformed.
            NotFound: a genuine task token of a namespace that no longer exists.
        """
        try:
            rule = rule_for(rpc)
        except KeyError:
            raise PermissionDenied(f"{rpc}: no access rule for this call; it is refused") from None
        if rule.scope is Scope.PUBLIC:
            return
        if principal is None:
            raise Unauthenticated(NO_CREDENTIALS)
        if rule.scope is Scope.AUTHENTICATED or principal.system_admin:
            return  # (a forged task token is still refused, by the frontend)
        if rule.scope is Scope.SYSTEM_ADMIN:
            raise PermissionDenied(f"{rpc} requires system_admin (principal {principal} is not one)")
        namespace, token_queue = await self._namespace(rule, request)
        assert rule.permission is not None
        self._require(rpc, principal, rule.permission, namespace)
        if rule.permission is Permission.WORK:
            check_worker_call(rpc, principal, namespace, request, token_queue)
        for other in sorted(rule.acts_on(request) - {namespace}) if rule.acts_on is not None else ():
            self._require(rpc, principal, Permission.WRITE, other, " (its commands act on that namespace)")

    @staticmethod
    def _require(rpc: str, principal: Principal, permission: Permission, namespace: str, why: str = "") -> None:
        require_permission(rpc, principal, permission, namespace, why)

    async def check(self, rpc: str, request: Any, metadata: Sequence[tuple[str, Any]] | None,
                    subject: str | None = None) -> Principal | None:
        """:meth:`authenticate` then :meth:`authorize`; the principal (None: an anonymous public call)."""
        principal = await self.authenticate(metadata, subject)
        await self.authorize(rpc, request, principal)
        return principal

    async def _namespace(self, rule: Rule, request: Any) -> tuple[str, str | None]:
        """The call's namespace, and for an answer by task token the task queue signed into it."""
        if rule.scope is Scope.TASK_TOKEN:
            return await self._token_namespace(request)
        assert rule.namespace is not None
        return rule.namespace(request), None

    async def _token_namespace(self, request: Any) -> tuple[str, str]:
        try:
            tok = self.tokens.verify(request.task_token)
        except ValueError as e:
            raise InvalidArgument(str(e)) from None
        ns = self.namespaces.by_id(tok.namespace_id)
        if ns is None:
            await self.namespaces.load()  # created on another member since this one looked
            ns = self.namespaces.by_id(tok.namespace_id)
        if ns is None:
            raise NotFound("task_token: its namespace no longer exists")
        return ns.name, str(getattr(tok, "task_queue", ""))


def require_permission(rpc: str, principal: Principal, permission: Permission, namespace: str, why: str = "") -> None:
    """Raise PermissionDenied (naming the role needed, the namespace and the role held) unless ``principal``
    has ``permission`` on ``namespace``; for handlers that find the namespace themselves (Nexus endpoints)."""
    if not principal.allows(permission, namespace):
        need = ROLE_FOR[permission].value
        has = principal.role_in(namespace)
        held = f"has role {has.value!r} there" if has is not None else "has no grant on it"
        raise PermissionDenied(f"{rpc} requires role {need!r} on namespace {namespace!r}{why} (principal "
                               f"{principal} {held})")


__all__ = ["Authorizer", "NO_CREDENTIALS", "TokenVerifier", "require_permission"]
