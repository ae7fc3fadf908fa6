"""Agents and their runs: agents, model endpoints (presets and the live check), conversations and their
messages, the chat's websocket consumer and pages, the REST API, the offline demo model, the composition
root (:mod:`agents.runtime`, which builds a run's model, tools and guard rails), the life of a run
(:mod:`agents.runs`) and the Django-free engine (:mod:`agents.engine`).
"""
