"""The deterministic workflow runtime: the event loop, the instance that replays and advances a run, the state machines of its commands, and the API workflow code calls (through ``spindle.workflow``).

The instance (``instance``) walks the history and owns the run's parts, each given its
collaborators explicitly: ``commands`` (commands produced, and matched against history),
``runtime`` (the services workflow code calls; it creates the ``loop``), ``handlers``
(signals, queries, updates), ``run`` (the run method and the closing command) and
``fatal`` (the error that fails the task). The ``*_calls`` modules are the functions of
``spindle.workflow``, by group.
"""
