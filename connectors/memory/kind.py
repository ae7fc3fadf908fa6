"""The memory kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`).

An organisation's memories (``agents.memory``) have one connector of this kind, named ``memory`` and made
with the first agent whose memory is switched on, whose one action, ``remember``, is the tool a run keeps
a fact or preference of its person with. The connector is how the guard rails see that tool: rate limits,
budgets, approval policies and the call log name it as they name any connector. A memory is the person's
own note in the platform, not a change to a connected system, so read-only mode allows it (it is no
write). It reaches nothing, so it has no settings, and its tool is built by the agents app, which holds
the memories (``tools_from_connectors`` is false).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from connectors.models import ConnectorKind
from connectors.platform_kinds import PlatformToolKind

REMEMBER_ACTION = "remember"
REMEMBER_TIMEOUT_SECONDS = 10.0


class MemoryKind(PlatformToolKind):
    """Keeping a fact or preference of the run's person: made by the platform itself."""

    kind = ConnectorKind.MEMORY.value
    action_name = REMEMBER_ACTION
    target = "memory"
    timeout_seconds = REMEMBER_TIMEOUT_SECONDS
    one_action_message = _("The memory has one action, “remember”.")
    no_request_message = _("Remembering has no HTTP method, path, SQL or MCP tool.")
    part_of_the_platform = "the memory is part of the platform: nothing to reach"
    # The call log keeps how long the memory was, never its text (the memory itself can be deleted).
    private_arguments = frozenset({"text"})
