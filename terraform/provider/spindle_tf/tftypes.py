"""A Terraform object type for the ``tf`` framework (which ships primitives, lists, sets and maps only)."""

from __future__ import annotations

import json

from typing import Any

from tf.types import TfType, Unknown


class Object(TfType):
    """``object({...})``: a fixed set of named, typed attributes. Maps to a Python ``dict``.

    :param attribute_types: attribute name -> element type.
    """

    def __init__(self, attribute_types: dict[str, TfType]) -> None:
        self.attribute_types = attribute_types

    def encode(self, value: Any) -> Any:
        """Encode every attribute (missing ones as null)."""
        if value is None or value is Unknown:
            return value
        return {k: t.encode(value.get(k)) if value.get(k) is not None else None for k, t in self.attribute_types.items()}

    def decode(self, value: Any) -> Any:
        """Decode every attribute present."""
        if value is None or value is Unknown:
            return value
        return {k: self.attribute_types[k].decode(v) if v is not None else None
                for k, v in value.items() if k in self.attribute_types}

    def tf_type(self) -> bytes:
        """``["object", {"name": <type>, ...}]`` in Terraform's JSON type syntax."""
        attrs = {k: json.loads(t.tf_type()) for k, t in self.attribute_types.items()}
        return json.dumps(["object", attrs], separators=(",", ":")).encode()
