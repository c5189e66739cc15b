"""Connection settings, under the name of Temporal's ``temporalio.service``.

``from spindle.service import TLSConfig`` works as ``from temporalio.service import TLSConfig``
does; :meth:`spindle.client.Client.connect` takes it as ``tls=TLSConfig(...)`` (or ``tls=True``).
"""

from spindle.client._tls import TLSConfig

__all__ = ["TLSConfig"]
