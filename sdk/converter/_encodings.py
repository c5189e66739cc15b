"""The ``encoding`` metadata values a payload carries: what the data converter writes and what codecs write.

The data converter reads them to decode a value (and to say which codec is missing when
a payload is still encoded); the codecs write and recognise their own. They are on the
wire: changing one changes the bytes every history stores.
"""

from __future__ import annotations

__all__ = ["ENCODING_JSON", "ENCODING_NULL", "ENCODING_BINARY", "ENCODING_ZLIB", "ENCODING_ENCRYPTED"]

#: A JSON value (after cattrs unstructuring): everything but ``None`` and ``bytes``.
ENCODING_JSON = b"json/plain"
#: ``None`` (no data).
ENCODING_NULL = b"binary/null"
#: ``bytes``, as they are.
ENCODING_BINARY = b"binary/plain"
#: A whole payload compressed by :class:`~spindle.converter.ZlibCodec`.
ENCODING_ZLIB = b"binary/zlib"
#: A whole payload encrypted by :class:`~spindle.converter.EncryptionCodec`.
ENCODING_ENCRYPTED = b"binary/encrypted"
