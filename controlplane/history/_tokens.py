"""Task tokens: what a worker hands back to complete a task (signed by the server), and workflow-task start nonces.

A token names the execution, the task (scheduled event id), the attempt and, for
workflow tasks, the start nonce. The server accepts a completion only when all of
them still match, so duplicate or late completions change nothing.

Tokens are signed (issue 15). Everything a token names is visible in the history, so
before signing anyone could build a token for an activity no worker had polled and
complete it. Now a token is ``v1.<key id>.<payload>.<mac>`` (ASCII; payload and MAC in
unpadded URL-safe base64), the MAC being HMAC-SHA256 over ``v1.<key id>.<payload>``
under a per-deployment secret key. A token that does not parse, names an unknown key
or fails its MAC is refused with INVALID_ARGUMENT before anything is looked up; a
correctly signed token that is stale gets NOT_FOUND as before. Neither changes anything.

Keys (:class:`TaskTokens`): by default one secret kept in the store (the server-secret
``task_token_key/1``, created by the first process that starts and read by every
cluster member), or keys given in the server configuration (``auth.task_token_keys``).
Several keys may verify at once, only one signs: rotating means adding a new key that
signs while the old ones keep verifying the tokens already handed out (see
docs/SECURITY.md). Tokens made before signing existed (JSON lists) are refused: a
worker holding one when the server is upgraded sees INVALID_ARGUMENT and the task
times out and is retried, as after a lost worker.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import itertools
import json
import re
import secrets
import time
import uuid

from collections.abc import Sequence
from dataclasses import dataclass

from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.store import ServerSecret, Store

WORKFLOW = "w"
ACTIVITY = "a"
QUERY = "q"
#: A Nexus task (docs/NEXUS.md): namespace_id is the endpoint's target namespace; workflow_id, run_id and
#: scheduled_event_id name the caller's run and its NexusOperationScheduled event; nonce is the caller's
#: namespace id; task_queue the endpoint's.
NEXUS = "n"

#: The format tag at the start of every signed token.
VERSION = b"v1"
#: Name prefix of the store-kept signing keys (``ServerSecret``); the key id follows it.
STORE_KEY_PREFIX = "task_token_key/"
#: Key ids: short, ASCII, no dot (the token's separator).
KEY_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
#: Shortest accepted signing key, bytes.
MIN_KEY_BYTES = 16


class BadTokenError(ValueError):
    """The task token is not one this server issued (malformed, unknown key or bad signature)."""


@dataclass(frozen=True)
class TaskToken:
    kind: str
    namespace_id: str
    workflow_id: str
    run_id: str
    scheduled_event_id: int
    attempt: int
    nonce: str = ""
    #: The task's queue (the run's normal queue for workflow and query tasks; the activity's
    #: queue): what a key confined to task queues may answer (``auth._task_queues``). '' in
    #: tokens signed before tokens carried it.
    task_queue: str = ""

    def payload(self) -> bytes:
        """The signed content (compact JSON)."""
        return json.dumps(
            [self.kind, self.namespace_id, self.workflow_id, self.run_id, self.scheduled_event_id, self.attempt, self.nonce,
             self.task_queue],
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_payload(cls, raw: bytes) -> "TaskToken":
        """Parse the signed content; BadTokenError if it is not a token's."""
        try:
            fields = json.loads(raw)
            k, ns, wid, rid, sid, att, nonce, *rest = fields  # rest: [task_queue], absent in older tokens
            if k not in (WORKFLOW, ACTIVITY, QUERY, NEXUS) or len(rest) > 1:
                raise ValueError(k)
            return cls(str(k), str(ns), str(wid), str(rid), int(sid), int(att), str(nonce), str(rest[0]) if rest else "")
        except Exception as e:  # noqa: BLE001 - any malformed token is the same error
            raise BadTokenError("task_token: malformed task token") from e


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def _unb64(raw: bytes) -> bytes:
    return base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))


class TaskTokens:
    """Signs the task tokens this deployment hands out and verifies the ones workers hand back.

    Until :meth:`load` runs it holds one random key (enough for a process whose tokens
    never outlive it); :meth:`load` replaces it with the deployment's keys.
    """

    def __init__(self) -> None:
        self._keys: dict[str, bytes] = {}
        self._signing = ""
        self._configured: list[tuple[str, bytes]] = []
        self._use_store_key = True
        self.set_keys({"local": secrets.token_bytes(32)}, "local")

    # ------------------------------------------------------------------ keys
    def configure(self, keys: Sequence[tuple[str, bytes]], *, use_store_key: bool = True) -> None:
        """Keys from the server configuration, the first one signing (applied by :meth:`load`).

        With ``use_store_key`` the store-kept key also verifies (and signs when no key is
        configured); turn it off once every token it signed is over.

        Raises:
            ValueError: a key id is not 1-32 letters, digits, '-' or '_', repeats, or a key
                is shorter than 16 bytes; or no key at all would be left.
        """
        seen: set[str] = set()
        for kid, secret in keys:
            if not KEY_ID_RE.match(kid):
                raise ValueError(f"task token key id {kid!r}: use 1-32 letters, digits, '-' or '_'")
            if kid in seen:
                raise ValueError(f"task token key id {kid!r} is given twice")
            if len(secret) < MIN_KEY_BYTES:
                raise ValueError(f"task token key {kid!r}: the secret must have at least {MIN_KEY_BYTES} bytes, "
                                 f"got {len(secret)}")
            seen.add(kid)
        if not keys and not use_store_key:
            raise ValueError("task tokens: no signing key (configure a key or keep the store-kept one)")
        self._configured = list(keys)
        self._use_store_key = use_store_key

    async def load(self, store: Store, *, now_ms: int | None = None) -> None:
        """Read the deployment's keys: the configured ones and the store-kept one (created if missing)."""
        keys = dict(self._configured)
        signing = self._configured[0][0] if self._configured else ""
        if self._use_store_key:
            stored = await store.list_server_secrets(STORE_KEY_PREFIX)
            if not stored:
                created = int(time.time() * 1000) if now_ms is None else now_ms
                stored = [await store.add_server_secret(
                    ServerSecret(f"{STORE_KEY_PREFIX}1", secrets.token_bytes(32), created))]
            for s in stored:
                kid = s.name[len(STORE_KEY_PREFIX):]
                if kid in keys:
                    raise ValueError(f"task token key id {kid!r} is both configured and kept in the store; rename the "
                                     "configured one")
                keys[kid] = s.value
            if not signing:
                newest = max(stored, key=lambda s: (s.create_time_ms, s.name))
                signing = newest.name[len(STORE_KEY_PREFIX):]
        self.set_keys(keys, signing)

    def set_keys(self, keys: dict[str, bytes], signing: str) -> None:
        """Replace the keys (``signing`` must be one of them)."""
        if signing not in keys:
            raise ValueError(f"signing key {signing!r} is not among the keys")
        self._keys = dict(keys)
        self._signing = signing

    @property
    def key_ids(self) -> list[str]:
        """The ids of the keys that verify (the signing one first)."""
        return [self._signing] + sorted(k for k in self._keys if k != self._signing)

    # ------------------------------------------------------------------ tokens
    def _mac(self, key: bytes, signed: bytes) -> bytes:
        return hmac.new(key, signed, hashlib.sha256).digest()

    def encode(self, tok: TaskToken) -> bytes:
        """The signed token for ``tok``."""
        kid = self._signing.encode()
        signed = VERSION + b"." + kid + b"." + _b64(tok.payload())
        return signed + b"." + _b64(self._mac(self._keys[self._signing], signed))

    def verify(self, raw: bytes) -> TaskToken:
        """The token ``raw`` carries, if this deployment signed it.

        Raises:
            BadTokenError: malformed, signed with a key this server does not have, or the
                signature does not match (the token was forged or altered).
        """
        parts = bytes(raw).split(b".")
        if len(parts) != 4 or parts[0] != VERSION:
            raise BadTokenError("task_token: malformed task token (not one this server issued)")
        _, kid, payload, mac = parts
        key = self._keys.get(kid.decode(errors="replace"))
        if key is None:
            raise BadTokenError("task_token: signed with a key this server does not have (forged, or the key was "
                                "retired)")
        try:
            given = _unb64(mac)
            body = _unb64(payload)
        except (binascii.Error, ValueError) as e:
            raise BadTokenError("task_token: malformed task token (not one this server issued)") from e
        if not hmac.compare_digest(given, self._mac(key, raw[: len(raw) - len(mac) - 1])):
            raise BadTokenError("task_token: bad signature (the token was forged or altered)")
        return TaskToken.from_payload(body)

    def decode(self, raw: bytes, kind: str) -> TaskToken:
        """The verified token of a task of ``kind``; InvalidArgument for a bad token or one of another kind."""
        try:
            tok = self.verify(raw)
        except BadTokenError as e:
            raise InvalidArgument(str(e)) from e
        if tok.kind != kind:
            raise InvalidArgument("task_token: this token belongs to another kind of task")
        return tok


class StartNonces:
    """Workflow-task start nonces, unique per engine instance.

    A restarted or new owner never accepts an answer to a start it did not make, and
    knows which starts were not its own (``issued_here``).
    """

    def __init__(self) -> None:
        self._prefix = uuid.uuid4().hex[:8]
        self._next = itertools.count(1)

    def new(self) -> str:
        """A new nonce (its first 8 characters name this engine instance)."""
        return f"{self._prefix}{next(self._next):x}"

    def issued_here(self, nonce: str) -> bool:
        """Whether this engine instance made the start that ``nonce`` names."""
        return nonce.startswith(self._prefix)


__all__ = ["ACTIVITY", "BadTokenError", "QUERY", "STORE_KEY_PREFIX", "StartNonces", "TaskToken", "TaskTokens", "WORKFLOW"]
