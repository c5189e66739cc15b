"""Command/event state machines of the workflow runtime, one module per kind of command.

Each machine creates its command(s) through a :class:`~spindle._workflow.statemachines._command.CommandSink`,
learns its event id when the matching command event is replayed or recorded, and
resolves the workflow's future when a result event arrives. They hold no event loop
logic, so they can be tested on their own.
"""
