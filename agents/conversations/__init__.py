"""The conversation command layer: the one way every entry point (the chat websocket, the HTTP chat, the
OpenAI-compatible endpoint, the MCP endpoint) reaches a conversation's runs. An entry point turns its
wire format into a typed command (:mod:`agents.conversations.commands`), hands it to
:mod:`agents.conversations.handling`, and turns the typed result back into its wire format. The
import-linter contract ``one-way-in`` (``pyproject.toml``) keeps entry points from reaching the run
manager and the run lifecycle any other way.
"""
