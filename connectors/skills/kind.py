"""The skill-library kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`).

An organisation's skills (``agents.skills``) have one connector of this kind, named ``skills`` and made
with the first skill, whose one action, ``read_skill``, is the tool a run reads a skill with. The
connector is how the guard rails see that tool: read-only mode, rate limits, budgets, approval policies
and the call log name it as they name any connector. It reaches no system, so it has no settings, and
its tool is built by the agents app, which holds the skills (``tools_from_connectors`` is false):
:meth:`SkillsKind.call` is never how a run reads a skill.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from connectors.models import ConnectorKind
from connectors.platform_kinds import PlatformToolKind

READ_SKILL_ACTION = "read_skill"
READ_TIMEOUT_SECONDS = 10.0


class SkillsKind(PlatformToolKind):
    """Reading one of the organisation's skills: a read, made by the platform itself."""

    kind = ConnectorKind.SKILLS.value
    action_name = READ_SKILL_ACTION
    target = "skill library"
    timeout_seconds = READ_TIMEOUT_SECONDS
    one_action_message = _("The skill library has one action, “read_skill”.")
    no_request_message = _("Reading a skill has no HTTP method, path, SQL or MCP tool.")
    part_of_the_platform = "the skill library is part of the platform: nothing to reach"
