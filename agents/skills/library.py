"""The organisation's skill library connector: the guard rails' identity of the skill-reading tool.

One connector of the skills kind per organisation (``connectors.skills.kind``), named ``skills`` (or
``skills_2``... when that name is taken), made with its one action, ``read_skill``, when the first skill
is saved. Its administrators can rate-limit that tool, hold it for approval or switch it off (no agent
then lists or reads a skill), as any connector's; the call log records every read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectors.models import Connector
from connectors.platform_kinds import platform_connector
from connectors.skills.kind import SkillsKind
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["READ_SKILL_PARAMETERS", "SKILLS_CONNECTOR_NAME", "skill_library_connector"]

SKILLS_CONNECTOR_NAME = "skills"
READ_SKILL_DESCRIPTION = (
    "Read one of the skills listed in your instructions: a procedure of the organisation that says how to "
    "do a kind of task. Read a skill before a task it describes and follow it. Give `file` to read one of "
    "the files the skill names instead of its procedure."
)
READ_SKILL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The skill's name, exactly as listed."},
        "file": {
            "type": "string",
            "description": "Optional: the path of one of the skill's files (as the skill lists them).",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


def skill_library_connector(*, organization: Organization, actor: User | None) -> Connector:
    """The organisation's skill library connector, made (active, with its action) the first time."""
    return platform_connector(
        organization=organization,
        adapter=SkillsKind(),
        name=SKILLS_CONNECTOR_NAME,
        description="The organisation's skills: procedures the agents read when they need them.",
        action_description=READ_SKILL_DESCRIPTION,
        parameters=READ_SKILL_PARAMETERS,
        actor=actor,
    )
