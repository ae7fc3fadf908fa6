"""The organisation's skill library connector: the guard rails' identity of the skill-reading tool.

One connector of the skills kind per organisation (``connectors.skills.kind``), named ``skills`` (or
``skills_2``... when that name is taken), made with its one action, ``read_skill``, when the first skill
is saved. Its administrators can rate-limit that tool, hold it for approval or switch it off (no agent
then lists or reads a skill), as any connector's; the call log records every read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from connectors.models import ActionSource, Connector, ConnectorAction, ConnectorKind
from connectors.selectors import connector_name_free
from connectors.skills.kind import READ_SKILL_ACTION
from platform_core.audit.audited import audited_save
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
    found = _library(organization)
    if found is not None:
        return found
    try:
        with transaction.atomic():
            connector = Connector(
                organization=organization,
                name=connector_name_free(organization, SKILLS_CONNECTOR_NAME),
                description="The organisation's skills: procedures the agents read when they need them.",
                kind=ConnectorKind.SKILLS,
            )
            audited_save(instance=connector, actor=actor)
            ConnectorAction.objects.create(
                organization=organization,
                connector=connector,
                name=READ_SKILL_ACTION,
                description=READ_SKILL_DESCRIPTION,
                parameters=READ_SKILL_PARAMETERS,
                is_write=False,
                source=ActionSource.MANUAL,
            )
            return connector
    except (IntegrityError, ValidationError):  # another first skill of the organisation made it meanwhile
        made = _library(organization)
        if made is None:
            raise
        return made


def _library(organization: Organization) -> Connector | None:
    return Connector.objects.for_org(organization).filter(kind=ConnectorKind.SKILLS).first()
