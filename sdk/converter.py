"""Public data-conversion API: :class:`DataConverter` and payload codecs.

See :mod:`spindle._converter` for the encoding rules.
"""

from spindle._converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec

__all__ = ["DataConverter", "PayloadCodec", "ZlibCodec", "EncryptionCodec"]
