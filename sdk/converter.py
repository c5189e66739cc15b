"""Public data-conversion API: :class:`DataConverter`, :func:`default` and payload codecs.

As in Temporal, a codec can ride on the converter::

    from spindle import converter
    data_converter = dataclasses.replace(converter.default(), payload_codec=MyCodec())
    client = await Client.connect("localhost:7233", data_converter=data_converter)

See :mod:`spindle._converter` for the encoding rules.
"""

from spindle._converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec

__all__ = ["DataConverter", "PayloadCodec", "ZlibCodec", "EncryptionCodec", "default"]


def default() -> DataConverter:
    """The default data converter (``DataConverter.default``: JSON through cattrs, no codec).

    It is immutable; derive a variant with ``dataclasses.replace(default(), payload_codec=...)``.
    """
    return DataConverter.default
