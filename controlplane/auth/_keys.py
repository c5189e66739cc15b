"""API keys: the secret's format, how it is stored (a keyed hash), and looking keys up with a bounded cache.

Secret: ``spk_<id>_<random>``. ``<id>`` is 16 hex digits (64 random bits) naming the
key: it is not secret, it is shown in listings and is the store's primary key, so a
call finds its key with one point lookup. ``<random>`` is 32 bytes from
:mod:`secrets` in URL-safe base64 (256 bits).

Hash: ``HMAC-SHA256(pepper, "<id>:<random>")``, where the pepper is a 32-byte
per-deployment secret (the server secret ``api_key_pepper``, created by the first
process that needs it and shared by every cluster member). Why a keyed hash and not a
password hash (scrypt, argon2): those slow hashes exist because human passwords are
guessable, so each guess must be expensive. A 256-bit random secret cannot be
guessed at any speed, so a slow hash would add nothing but CPU on every call (tens of
milliseconds each for scrypt at sane parameters), or force a cache of verified
secrets. HMAC-SHA256 costs about a microsecond, is a one-way function (the stored value
gives no way back to the secret), and the pepper means the ``ApiKeys`` rows alone (a
table export, a backup of it) do not even let anyone test a candidate secret. Compared
with :func:`hmac.compare_digest` (constant time).

Cache: a verified key's row is kept for ``cache_ttl`` seconds (default 5), so a busy
worker does not read the store on every call. Revoking a key through this process
updates its cache at once: the key fails its next call here. Another cluster member
that cached the key sees the revocation when its entry expires, i.e. within
``cache_ttl`` seconds (``auth.key_cache_ttl``). Expiry is checked on every call against
the clock, cached or not. Unknown ids are cached too (same bound), so a flood of made-up
keys costs the store at most one read per id per ``cache_ttl``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from spindle.controlplane.errors import Unauthenticated, Unavailable
from spindle.controlplane.store import ApiKeyRow, ConditionFailedError, ServerSecret, Store, StoreError

from ._principal import Principal
from ._roles import Role
from ._task_queues import encode_task_queues, parse_task_queues

PREFIX = "spk_"
PEPPER_NAME = "api_key_pepper"
_SECRET_RE = re.compile(r"^spk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
#: Most keys (known or unknown ids) kept in the lookup cache.
CACHE_SIZE = 10_000


@dataclass(frozen=True)
class ParsedSecret:
    """The two parts of ``spk_<id>_<random>``."""

    key_id: str
    random: str


def new_secret() -> ParsedSecret:
    """A fresh key id and random part (256 bits)."""
    random = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    return ParsedSecret(secrets.token_hex(8), random)


def format_secret(parsed: ParsedSecret) -> str:
    """``spk_<id>_<random>``."""
    return f"{PREFIX}{parsed.key_id}_{parsed.random}"


def parse_secret(secret: str) -> ParsedSecret | None:
    """The parts of a well-formed secret, or None."""
    m = _SECRET_RE.match(secret)
    return ParsedSecret(m.group(1), m.group(2)) if m else None


def hash_secret(pepper: bytes, parsed: ParsedSecret) -> bytes:
    """What the store keeps of a secret: HMAC-SHA256 under the deployment's pepper."""
    return hmac.new(pepper, f"{parsed.key_id}:{parsed.random}".encode(), hashlib.sha256).digest()


def grants_of(row: ApiKeyRow) -> dict[str, Role]:
    """The grants a stored key holds."""
    return {ns: Role(role) for ns, role in json.loads(row.grants or "{}").items()}


def principal_of(row: ApiKeyRow) -> Principal:
    """The principal a key stands for (its grants, and the task queues its worker grants are confined to)."""
    return Principal(id=f"key:{row.key_id}", name=row.name, grants=grants_of(row), system_admin=row.system_admin,
                     task_queues=parse_task_queues(row.task_queues))


def _wall_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Entry:
    row: ApiKeyRow | None
    principal: Principal | None
    until: float


class ApiKeys:
    """Creates, finds, lists and revokes API keys in a store (see the module docstring for the cache bound).

    Args:
        store: where keys live.
        cache_ttl: seconds a looked-up key is trusted without reading the store again.
        now_ms: wall clock (epoch ms) for creation, expiry and revocation times.
        monotonic: the cache's clock.
    """

    def __init__(self, store: Store, *, cache_ttl: float = 5.0, now_ms: Callable[[], int] = _wall_ms,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.cache_ttl = cache_ttl
        self._now_ms = now_ms
        self._monotonic = monotonic
        self._pepper: bytes | None = None
        self._cache: OrderedDict[str, _Entry] = OrderedDict()

    async def pepper(self) -> bytes:
        """The deployment's pepper (created in the store on first use)."""
        if self._pepper is None:
            stored = await self.store.add_server_secret(ServerSecret(PEPPER_NAME, secrets.token_bytes(32), self._now_ms()))
            self._pepper = stored.value
        return self._pepper

    # ------------------------------------------------------------------ authentication
    async def authenticate(self, secret: str) -> Principal:
        """The principal ``secret`` stands for.

        Raises:
            Unauthenticated: malformed, unknown, wrong, revoked or expired (the message says
                which, except that an unknown id and a wrong secret read the same).
            Unavailable: the store cannot be read (the client retries).
        """
        parsed = parse_secret(secret)
        if parsed is None:
            raise Unauthenticated("API key: malformed (expected spk_<id>_<secret>, as printed when it was created)")
        try:
            entry = await self._lookup(parsed.key_id)
            pepper = await self.pepper()
        except StoreError as e:
            raise Unavailable(f"API key {parsed.key_id}: cannot be checked now (store unavailable: {e})") from None
        row = entry.row
        if row is None or not hmac.compare_digest(row.secret_hash, hash_secret(pepper, parsed)):
            raise Unauthenticated(f"API key {parsed.key_id}: unknown key or wrong secret")
        if row.revoke_time_ms:
            raise Unauthenticated(f"API key {row.key_id} ({row.name!r}): revoked")
        if row.expire_time_ms and self._now_ms() >= row.expire_time_ms:
            raise Unauthenticated(f"API key {row.key_id} ({row.name!r}): expired at {_iso(row.expire_time_ms)}")
        assert entry.principal is not None
        return entry.principal

    async def _lookup(self, key_id: str) -> _Entry:
        now = self._monotonic()
        entry = self._cache.get(key_id)
        if entry is not None and entry.until > now:
            self._cache.move_to_end(key_id)
            return entry
        row = await self.store.get_api_key(key_id)
        return self._remember(key_id, row)

    def _remember(self, key_id: str, row: ApiKeyRow | None) -> _Entry:
        entry = _Entry(row, principal_of(row) if row is not None else None, self._monotonic() + self.cache_ttl)
        self._cache[key_id] = entry
        self._cache.move_to_end(key_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return entry

    # ------------------------------------------------------------------ management
    async def create(self, name: str, grants: Mapping[str, Role], *, system_admin: bool = False, ttl_ms: int = 0,
                     created_by: str = "", secret: ParsedSecret | None = None,
                     task_queues: Mapping[str, Sequence[str]] | None = None) -> tuple[ApiKeyRow, str]:
        """Store a new key; returns its row and its secret (the only time the secret exists outside the caller).

        ``secret`` gives the secret instead of generating one (the bootstrap key of the config).
        ``task_queues`` confines worker grants to task queues (checked by the caller:
        ``_task_queues.check_task_queues``).

        Raises:
            ConditionFailedError: a key with this id exists.
        """
        parsed = secret or new_secret()
        now = self._now_ms()
        row = ApiKeyRow(key_id=parsed.key_id, name=name, secret_hash=hash_secret(await self.pepper(), parsed),
                        grants=json.dumps({ns: r.value for ns, r in sorted(grants.items())}),
                        system_admin=system_admin, create_time_ms=now, expire_time_ms=now + ttl_ms if ttl_ms else 0,
                        created_by=created_by, task_queues=encode_task_queues(task_queues or {}))
        await self.store.create_api_key(row)
        self._remember(row.key_id, row)
        return row, format_secret(parsed)

    def is_active(self, row: ApiKeyRow) -> bool:
        """Neither revoked nor expired (now)."""
        return not row.revoke_time_ms and not (row.expire_time_ms and row.expire_time_ms <= self._now_ms())

    async def get(self, key_id: str) -> ApiKeyRow | None:
        """A key as stored now (no cache)."""
        return await self.store.get_api_key(key_id)

    async def list(self) -> list[ApiKeyRow]:
        """Every key (revoked and expired ones included), by id."""
        return await self.store.list_api_keys()

    async def revoke(self, key_id: str) -> ApiKeyRow | None:
        """Revoke a key: it fails its next call on this process (others: within ``cache_ttl``). None if unknown."""
        row = await self.store.revoke_api_key(key_id, self._now_ms())
        if row is not None:
            self._remember(key_id, row)
        return row

    def refresh(self, rows: Iterable[ApiKeyRow]) -> None:
        """Keys changed in the store by someone else (a namespace delete took grants away): trusted as they are now.

        Only this process's cache; other members see the change within ``cache_ttl``.
        """
        for row in rows:
            self._remember(row.key_id, row)

    async def ensure(self, secret: str, name: str, *, created_by: str) -> tuple[ApiKeyRow, bool]:
        """Make sure the system_admin key ``secret`` exists (the configured bootstrap key). Returns (row, created).

        A key already stored under its id is kept as it is (a revoked bootstrap key stays revoked).

        Raises:
            ValueError: ``secret`` is malformed, or its id is stored with another secret.
        """
        parsed = parse_secret(secret)
        if parsed is None:
            raise ValueError("not an API key (expected spk_<16 hex digits>_<43 URL-safe base64 characters>)")
        existing = await self.store.get_api_key(parsed.key_id)
        if existing is None:
            try:
                row, _ = await self.create(name, {}, system_admin=True, created_by=created_by, secret=parsed)
                return row, True
            except ConditionFailedError:  # another member created it just now
                existing = await self.store.get_api_key(parsed.key_id)
                assert existing is not None
        if not hmac.compare_digest(existing.secret_hash, hash_secret(await self.pepper(), parsed)):
            raise ValueError(f"the store holds key {parsed.key_id} with another secret")
        return existing, False


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


__all__ = ["ApiKeys", "CACHE_SIZE", "PEPPER_NAME", "PREFIX", "ParsedSecret", "format_secret", "grants_of",
           "hash_secret", "new_secret", "parse_secret", "principal_of"]
