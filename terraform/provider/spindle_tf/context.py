"""What a resource or data source needs from the configured provider.

Resources and data sources are handed the provider when Terraform instantiates them;
they depend on this protocol, not on :class:`~spindle_tf.provider.SpindleProvider`
(which lists them), so the provider and its resources do not import each other.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from tf.utils import Diagnostics


@runtime_checkable
class ProviderContext(Protocol):
    """The configured provider, as resources and data sources use it."""

    #: The provider's ``namespace`` setting (``default`` when unset).
    default_namespace: str

    def require_connection(self, diags: Diagnostics) -> Any:
        """The configured ``SpindleConnection``, or None after adding a diagnostic that says why there is none."""
        ...


__all__ = ["ProviderContext"]
