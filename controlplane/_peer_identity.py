"""Who is calling, as far as the transport can tell: the subject of a verified client certificate.

``peer_certificate_subject(context)`` reads the call's gRPC auth context. A subject is
there only when the listener requires client certificates (``tls.client_ca_file``: mutual
TLS), so every subject returned was verified against that CA during the handshake.

The subject format is RFC 4514, most specific attribute first, as gRPC (BoringSSL,
``XN_FLAG_RFC2253``) prints it, with non-ASCII text kept as UTF-8:

- ``CN=worker-a,O=Acme`` for a certificate whose subject is ``O=Acme, CN=worker-a``;
- ``,`` ``+`` ``"`` ``\\`` ``<`` ``>`` ``;`` in a value, a leading ``#`` or space and a
  trailing space are escaped with a backslash: ``CN=worker\\, a``;
- well-known attribute types by their short names (``CN``, ``O``, ``OU``, ``C``, ``L``,
  ``ST``, ``STREET``, ``DC``, ``UID``); others by OpenSSL's name, e.g. ``emailAddress``;
- multi-valued RDNs joined with ``+``.

For names made of the usual attributes this is exactly what ``cryptography``'s
``x509.Name.rfc4514_string()`` and ``openssl x509 -noout -subject -nameopt RFC2253`` print.
"""

from __future__ import annotations

import re

from typing import Any

__all__ = ["peer_certificate_subject"]

_HEX_RUN = re.compile(r"(?:\\[0-9A-Fa-f]{2})+")


def _unescape_utf8(subject: str) -> str:
    """Turn runs of ``\\XX`` escapes of non-ASCII bytes back into the UTF-8 text they encode.

    BoringSSL escapes each byte >= 0x80 as ``\\XX``; ``\\\\`` (an escaped backslash) is
    kept as it is, so text like ``\\\\AB`` is never read as a byte.
    """
    out: list[str] = []
    i = 0
    n = len(subject)
    while i < n:
        ch = subject[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        m = _HEX_RUN.match(subject, i)
        if m is None:  # an escaped special character: keep the pair
            out.append(subject[i:i + 2])
            i += 2
            continue
        raw = bytes(int(m.group(0)[k + 1:k + 3], 16) for k in range(0, len(m.group(0)), 3))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if text and all(ord(c) >= 0x80 for c in text):
            out.append(text)
        else:  # escapes of ASCII bytes (or not UTF-8): keep them as written
            out.append(m.group(0))
        i = m.end()
    return "".join(out)


def _first(auth: Any, key: str) -> str | None:
    values = auth.get(key) if auth else None
    if not values:
        return None
    v = values[0]
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)


def peer_certificate_subject(context: Any) -> str | None:
    """The RFC 4514 subject of the certificate the caller presented and the server verified, or None.

    ``context`` is the call's ``grpc.ServicerContext`` (sync or asyncio). None when the call
    did not come over TLS, when the listener does not ask for client certificates, or for
    an in-process caller (no ``auth_context``). See the module docstring for the format.
    """
    get = getattr(context, "auth_context", None)
    if get is None:
        return None
    try:
        auth = get()
    except Exception:  # noqa: BLE001 - an in-process stand-in for a context
        return None
    if _first(auth, "transport_security_type") != "ssl":
        return None
    subject = _first(auth, "x509_subject")
    if subject:
        return _unescape_utf8(subject)
    cn = _first(auth, "x509_common_name")  # gRPC builds without the subject property
    if cn:
        return "CN=" + re.sub(r'([,+"\\<>;])', r"\\\1", cn)
    return None
