"""Connection settings, under the name of Temporal's ``temporalio.service``.

``from spindle.service import TLSConfig`` works as ``from temporalio.service import TLSConfig``
does; :meth:`spindle.Client.connect` takes it as ``tls=TLSConfig(...)`` (or ``tls=True``).
"""

from spindle._tls import TLSConfig

__all__ = ["TLSConfig"]
