"""The AES-256-GCM payload codec: encrypts payloads, bound to the workflow and role each belongs to.

Needs the optional ``cryptography`` package (imported when an :class:`EncryptionCodec`
is made, so importing this module never needs it).
"""

from __future__ import annotations

import json
import os

from collections.abc import Mapping, Sequence
from typing import ClassVar

from spindle.api import messages_pb2 as pb
from spindle.converter._encodings import ENCODING_ENCRYPTED
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._serialization_context import (
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

__all__ = ["EncryptionCodec"]

_AAD_MARKER = b"spindle/v1"


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """Encrypts payloads with AES-256-GCM (needs the optional ``cryptography`` package).

    Keys: ``key`` is the current 32-byte key, stored under ``key_id`` in each payload's
    metadata. For rotation, pass the keys still needed to decrypt older payloads in
    ``previous_keys`` (``{key_id: key}``), or give every key in ``keys`` and name the
    current one with ``key_id``: payloads are encrypted with the current key and
    decrypted with whichever key their id names.

    Binding (``bind_context=True``, the default): inside a client or worker, each
    ciphertext is bound (AES-GCM associated data) to its namespace, workflow id and role
    (:class:`WorkflowSerializationContext`), so a ciphertext copied into another
    workflow, namespace or field fails to decrypt. A payload whose workflow is unknown
    at encoding (an activity completed by task token without
    ``AsyncActivityHandle.with_context``) is refused. Payloads encrypted before binding
    existed (no ``encryption-aad`` metadata) still decrypt, unless ``strict``.

    ``strict=True`` refuses, on decode, any payload that is not encrypted (or, with
    binding, not bound): a plaintext signal or start input from someone without the key
    fails the workflow task with a clear error instead of reaching workflow code.

    Failure messages and stack traces are encrypted too (``encode_common_attributes``).

    Raises:
        ImportError: ``cryptography`` is not installed
            (``pip install 'spindle[encryption]'`` or ``pip install cryptography``).
        ValueError: a key is not 32 bytes, no key is given, or ``key_id`` is not among ``keys``.
    """

    encode_common_attributes: ClassVar[bool] = True

    def __init__(self, key: bytes | None = None, *, key_id: str = "default",
                 previous_keys: Mapping[str, bytes] | None = None, keys: Mapping[str, bytes] | None = None,
                 strict: bool = False, bind_context: bool = True) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:  # optional extra
            raise ImportError(
                "EncryptionCodec needs the 'cryptography' package: pip install 'spindle[encryption]'"
            ) from e
        all_keys: dict[str, bytes] = dict(keys or {})
        if key is not None:
            all_keys[key_id] = key
        all_keys.update({k: v for k, v in (previous_keys or {}).items() if k not in all_keys})
        if not all_keys:
            raise ValueError("EncryptionCodec needs a key (key=...) or keys={key_id: key, ...}")
        if key_id not in all_keys:
            raise ValueError(f"EncryptionCodec key_id {key_id!r} is not among the keys given ({sorted(all_keys)})")
        for kid, k in all_keys.items():
            if not isinstance(k, (bytes, bytearray)) or len(k) != 32:
                size = len(k) if isinstance(k, (bytes, bytearray)) else type(k).__name__
                raise ValueError(f"encryption key {kid!r} must be 32 bytes, got {size}")
        self.key_id = key_id
        self.strict = strict
        self.bind_context = bind_context
        self._ciphers = {kid: AESGCM(bytes(k)) for kid, k in all_keys.items()}
        self._context: WorkflowSerializationContext | None = None

    def with_context(self, context: SerializationContext) -> EncryptionCodec:
        """This codec bound to ``context`` (called by the client and worker for each payload's context)."""
        if not isinstance(context, WorkflowSerializationContext) or not self.bind_context:
            return self
        bound = object.__new__(EncryptionCodec)
        bound.__dict__.update(self.__dict__)
        bound._context = context
        return bound

    @property
    def key_ids(self) -> list[str]:
        """Every key id this codec can decrypt, current first."""
        return [self.key_id, *sorted(k for k in self._ciphers if k != self.key_id)]

    def _where(self) -> str:
        return f" ({self._context.describe()})" if self._context is not None else ""

    def _aad(self) -> bytes | None:
        ctx = self._context
        if ctx is None:
            return None
        return json.dumps([ctx.namespace, ctx.workflow_id, ctx.field]).encode()

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        cipher = self._ciphers[self.key_id]
        aad = self._aad()
        ctx = self._context
        if aad is not None and ctx is not None and not ctx.workflow_id:
            raise ValueError(
                f"EncryptionCodec binds each payload to its workflow, but the workflow of this "
                f"{ctx.field or 'payload'} is not known here: complete an activity by task token "
                "through client.get_async_activity_handle(token).with_context(WorkflowSerializationContext("
                "namespace, workflow_id)), or use EncryptionCodec(bind_context=False)")
        metadata: dict[str, bytes] = {"encoding": ENCODING_ENCRYPTED, "encryption-key-id": self.key_id.encode()}
        if aad is not None:
            metadata["encryption-aad"] = _AAD_MARKER
        out: list[pb.Payload] = []
        for p in payloads:
            nonce = os.urandom(12)
            data = nonce + cipher.encrypt(nonce, p.SerializeToString(), aad)
            out.append(pb.Payload(metadata=metadata, data=data))
        return out

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            encoding = p.metadata.get("encoding", b"")
            if encoding != ENCODING_ENCRYPTED:
                if self.strict:
                    raise ValueError(
                        f"EncryptionCodec(strict=True) refuses an unencrypted payload (encoding "
                        f"{encoding.decode(errors='replace') or 'none'!r}){self._where()}: it was not written by a "
                        "holder of the key")
                out.append(p)
                continue
            kid = p.metadata.get("encryption-key-id", b"").decode(errors="replace")
            cipher = self._ciphers.get(kid)
            if cipher is None:
                raise ValueError(f"payload{self._where()} is encrypted with unknown key id {kid!r} "
                                 f"(this codec knows {self.key_ids})")
            marker = p.metadata.get("encryption-aad")
            aad: bytes | None = None
            if marker is not None:
                if marker != _AAD_MARKER:
                    raise ValueError(f"payload{self._where()} is bound with an unknown scheme {marker!r}")
                aad = self._aad()
                if aad is None:
                    raise ValueError("payload is bound to its workflow and role: decode it through a Client or "
                                     "Worker, or with codec.with_context(WorkflowSerializationContext(...))")
            elif self.strict and self.bind_context and self._context is not None:
                raise ValueError(f"EncryptionCodec(strict=True) refuses a payload{self._where()} that is not bound "
                                 "to its workflow (encrypted without context)")
            if len(p.data) < 12 + 16:
                raise ValueError(f"encrypted payload{self._where()} is too short ({len(p.data)} bytes)")
            try:
                plain = cipher.decrypt(p.data[:12], p.data[12:], aad)
            except Exception as e:
                hint = (": it was encrypted for another workflow, namespace or field, or it was altered"
                        if aad is not None else ": it was altered or the key is wrong")
                raise ValueError(f"cannot decrypt payload{self._where()} with key id {kid!r}{hint} "
                                 f"({type(e).__name__})") from e
            out.append(pb.Payload.FromString(plain))
        return out
