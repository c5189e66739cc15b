"""Public data-conversion API: :class:`DataConverter` and payload codecs.

See :mod:`sdk._converter` for the encoding rules.
"""

from sdk._converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec

__all__ = ["DataConverter", "PayloadCodec", "ZlibCodec", "EncryptionCodec"]
