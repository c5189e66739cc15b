"""Public data-conversion API: :class:`DataConverter`, :func:`default`, payload codecs and their context.

As in Temporal, a codec can ride on the converter::

    from spindle import converter
    data_converter = dataclasses.replace(converter.default(), payload_codec=MyCodec())
    client = await Client.connect("localhost:7233", data_converter=data_converter)

A codec that implements :class:`WithSerializationContext` gets each payload's
:class:`WorkflowSerializationContext` (namespace, workflow id, role); the
:class:`EncryptionCodec` binds ciphertexts to it. See :mod:`spindle.converter._data_converter` for the
encoding rules, :mod:`spindle.converter._failure_converter` for failures and
:mod:`spindle.converter._payload_visitor` for the roles. :func:`decode_history`
decodes a recorded history (as the server stores it) for tools that show it;
:class:`CodecServerCodec` calls a remote codec server (Temporal's protocol) instead of
holding keys. Temporal's payload converters are here too: ``DataConverter(payload_converter_class=...)``
with a :class:`CompositePayloadConverter` of :class:`EncodingPayloadConverter` s replaces the
built-in JSON path (see :mod:`spindle.converter._payload_converter`).
"""

from spindle.converter._codec_server import CodecServerCodec
from spindle.converter._data_converter import DataConverter
from spindle.converter._encoding_converters import (
    AdvancedJSONEncoder,
    BinaryNullPayloadConverter,
    BinaryPlainPayloadConverter,
    BinaryProtoPayloadConverter,
    JSONPlainPayloadConverter,
    JSONProtoPayloadConverter,
    JSONTypeConverter,
    value_to_type,
)
from spindle.converter._encryption_codec import EncryptionCodec
from spindle.converter._history_codec import decode_history
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_converter import (
    CompositePayloadConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    PayloadConverter,
)
from spindle.converter._serialization_context import (
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)
from spindle.converter._zlib_codec import ZlibCodec

__all__ = ["DataConverter", "PayloadCodec", "ZlibCodec", "EncryptionCodec", "CodecServerCodec", "SerializationContext",
           "WorkflowSerializationContext", "WithSerializationContext", "decode_history", "default",
           "PayloadConverter", "EncodingPayloadConverter", "CompositePayloadConverter", "DefaultPayloadConverter",
           "BinaryNullPayloadConverter", "BinaryPlainPayloadConverter", "JSONProtoPayloadConverter",
           "BinaryProtoPayloadConverter", "JSONPlainPayloadConverter", "AdvancedJSONEncoder", "JSONTypeConverter",
           "value_to_type"]


def default() -> DataConverter:
    """The default data converter (``DataConverter.default``: JSON through cattrs, no codec).

    It is immutable; derive a variant with ``dataclasses.replace(default(), payload_codec=...)``.
    """
    return DataConverter.default
