"""A Terraform provider for Spindle namespaces, written in Python on the ``tf`` framework.

The provider runs from its own virtual environment (``tf`` needs protobuf<6, the
control plane uses protobuf 7) and talks to a Spindle control plane over gRPC with
stubs generated for that environment at install time. ``spindle terraform
install-provider`` creates the environment, the stubs, the launcher and the
Terraform CLI configuration.

Importing this package does not import ``tf`` or protobuf, so the pure parts
(:mod:`spindle_tf.validation`, :mod:`spindle_tf.model`) can be used and tested
from any environment.
"""

from __future__ import annotations

#: Provider version, as written into the filesystem mirror.
__version__ = "0.1.0"

#: Terraform source address: ``required_providers { spindle = { source = SOURCE } }``.
PROVIDER_SOURCE = "spindle.local/spindle/spindle"

__all__ = ["PROVIDER_SOURCE", "__version__"]
