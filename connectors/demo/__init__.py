"""The demo organisation's systems and its connectors to them.

- :mod:`.api`: the demo ERP's HTTP API under ``/demo-api/`` (its models are models of this app).
- :mod:`.mcp`: the demo MCP server under ``/demo-mcp/`` and its connector.
- :mod:`.database`: the demo ``purchasing`` database connector.
- :mod:`.seed`: the demo organisation's connectors, seeded by ``seed_demo``.
"""
