"""Wire messages under the module paths Temporal code imports them from (``spindle.api.common.v1``).

Spindle's wire API is ``spindle.controlplane.api`` (package ``spindle.v1``); the names here are
the same message classes, re-exported where ported Temporal code looks for them.
"""
