"""Durable runs, the engine's side: what a run needs to continue in another process.

- :mod:`~agents.engine.durable.checkpoint`: a ReAct run's state as JSON, reported incrementally after
  every iteration (:class:`~agents.engine.durable.checkpoint.Checkpoint`) and folded back into one.
- :mod:`~agents.engine.durable.ledger`: the ledger of the tool calls a run made, so a resumed run never
  makes a call twice.

Plan mode's checkpoints are ReAct checkpoints of its steps inside its plans' state, which plan mode
serialises itself (``agents.engine.plan.checkpoint``: it knows the plans). The storage side is the
agents app's: ``agents.runs.checkpoints`` keeps them in the database
(``RunCheckpoint`` rows and the ``ToolCallEntry`` ledger), written with the run's events. How the ReAct
loop stops, parks and resumes is its own mixin, ``agents.engine.react_durable``.
"""
