"""The knowledge-base kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`).

A knowledge base (``agents.knowledge``) owns one connector of this kind, made and renamed with it, whose
one action, ``search``, is the knowledge base's search tool. The connector is how the guard rails see
the tool: read-only mode, rate limits, budgets, approval policies and the call log name it as they name
any connector. It reaches no system, so it has no settings, and its tool is built by the agents app,
which holds the documents (``tools_from_connectors`` is false): :meth:`KnowledgeKind.call` is never how
a run searches.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from connectors.models import ConnectorKind
from connectors.platform_kinds import PlatformToolKind

SEARCH_ACTION = "search"
SEARCH_TIMEOUT_SECONDS = 30.0


class KnowledgeKind(PlatformToolKind):
    """A knowledge base's search: a read, made by the platform itself."""

    kind = ConnectorKind.KNOWLEDGE.value
    action_name = SEARCH_ACTION
    target = "knowledge base search"
    timeout_seconds = SEARCH_TIMEOUT_SECONDS
    one_action_message = _("A knowledge base has one action, “search”.")
    no_request_message = _("A knowledge base's search has no HTTP method, path, SQL or MCP tool.")
    part_of_the_platform = "a knowledge base is part of the platform: nothing to reach"
