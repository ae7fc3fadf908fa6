"""The guard rails around every tool call: read-only mode, approval gates (Feishu cards, the approvals
inbox), rate limits, the audit of every call, truncation and session context, as engine hooks that return
typed verdicts. Imports connectors, the tenancy core and the engine; never the agents app (a decision
reaches the run waiting on it through the ``approval_closed`` signal, :mod:`agents.runs.wake`).
"""
