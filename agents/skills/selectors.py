"""Reads of skills, each scoped to one organisation.

:func:`skills_of_agent` is what a run lists in its system prompt (the agent's allowed, active skills,
when the organisation's skill library is switched on); :func:`skill_read` is what its tool answers,
checked again at every call (a skill switched off or taken from the agent mid-run is no longer read).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from agents.engine.skills import MAX_LISTED_SKILLS, SkillListing
from agents.skills.models import Skill, SkillFile, SkillVersion
from agents.skills.packaging import SkillFolder, skill_folder_zip
from connectors.models import Connector, ConnectorKind
from connectors.skills.kind import READ_SKILL_ACTION
from platform_core.models import Organization


def skill_list_for_org(*, organization: Organization | int) -> QuerySet[Skill]:
    """The organisation's skills, by name."""
    return Skill.objects.for_org(organization).order_by("name")


def skill_get_for_org(*, organization: Organization | int, skill_id: Any) -> Skill | None:
    """The organisation's skill of that id (``None`` for a missing one, another organisation's, or a
    malformed id alike)."""
    try:
        pk = uuid.UUID(str(skill_id))
    except ValueError:
        return None
    return Skill.objects.for_org(organization).filter(pk=pk).first()


def skill_versions(*, skill: Skill) -> QuerySet[SkillVersion]:
    """The skill's versions, newest first, with who saved each and how many files it has."""
    return (
        SkillVersion.objects.for_org(skill.organization_id)
        .filter(skill=skill)
        .select_related("created_by")
        .prefetch_related("files")
        .order_by("-number")
    )


def skill_files_current(*, skill: Skill) -> dict[str, str]:
    """The files of the skill's current version, as path -> text."""
    return dict(
        SkillFile.objects.for_org(skill.organization_id)
        .filter(version__skill=skill, version__number=skill.version)
        .order_by("path")
        .values_list("path", "content")
    )


@dataclass(frozen=True, slots=True)
class AgentSkills:
    """What a run of an agent is told of its skills: the skill library connector's id and name (its tool
    is ``<name>__read_skill``) and the allowed, active skills' names and descriptions, by name."""

    connector_id: str
    connector_name: str
    listings: tuple[SkillListing, ...]


def skills_of_agent(*, organization_id: int, agent_id: Any) -> AgentSkills | None:
    """The agent's skills as its runs list them, or ``None`` when it has none (no skill allowed and
    active, or the skill library's connector or its action switched off); at most :data:`MAX_LISTED_SKILLS`."""
    listed = list(
        Skill.objects.for_org(organization_id)
        .filter(agents=agent_id, is_active=True)
        .order_by("name")
        .values_list("name", "description")[:MAX_LISTED_SKILLS]
    )
    if not listed:
        return None
    library = (
        Connector.objects.for_org(organization_id)
        .filter(
            kind=ConnectorKind.SKILLS,
            is_active=True,
            actions__name=READ_SKILL_ACTION,
            actions__is_active=True,
        )
        .values_list("pk", "name")
        .first()
    )
    if library is None:
        return None
    return AgentSkills(
        connector_id=str(library[0]),
        connector_name=library[1],
        listings=tuple(SkillListing(name=name, description=about) for name, about in listed),
    )


@dataclass(frozen=True, slots=True)
class SkillText:
    """A skill read by a run: its body, or one of its files (``file``), at its current version."""

    name: str
    version: int
    file: str
    text: str
    files: tuple[str, ...]  # the paths of the version's files


@dataclass(frozen=True, slots=True)
class NoSuchSkill:
    """No skill of that name that the agent may read (missing, another organisation's, not allowed to
    the agent, or switched off alike); ``readable``: the names it may read."""

    readable: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NoSuchFile:
    """The skill has no file of that path; ``files``: those it has."""

    name: str
    version: int
    files: tuple[str, ...]


SkillRead = SkillText | NoSuchSkill | NoSuchFile


def skill_read(*, organization_id: int, agent_id: Any, name: str, file: str = "") -> SkillRead:
    """The current body (or the file ``file``) of the skill ``name`` of the organisation, when the agent
    is allowed it and it is active (sync: two queries, three for a file)."""
    allowed = Skill.objects.for_org(organization_id).filter(agents=agent_id, is_active=True)
    skill = allowed.filter(name=name).first()
    if skill is None:
        return NoSuchSkill(readable=tuple(allowed.order_by("name").values_list("name", flat=True)[:50]))
    current = SkillFile.objects.for_org(organization_id).filter(
        version__skill=skill, version__number=skill.version
    )
    paths = tuple(current.order_by("path").values_list("path", flat=True))
    if not file:
        return SkillText(name=skill.name, version=skill.version, file="", text=skill.body, files=paths)
    if file not in paths:
        return NoSuchFile(name=skill.name, version=skill.version, files=paths)
    text = current.filter(path=file).values_list("content", flat=True).get()
    return SkillText(name=skill.name, version=skill.version, file=file, text=text, files=paths)


@dataclass(frozen=True, slots=True)
class SkillExport:
    """A skill's folder as a .zip (:func:`agents.skills.packaging.skill_folder_zip`) and its file name."""

    filename: str
    data: bytes


def skill_export(*, skill: Skill) -> SkillExport:
    """The skill's current version as the .zip of its folder, which imports back as the same skill."""
    folder = SkillFolder(
        name=skill.name,
        description=skill.description,
        body=skill.body,
        front_matter=skill.front_matter,
        files=skill_files_current(skill=skill),
    )
    return SkillExport(filename=f"{skill.name}.zip", data=skill_folder_zip(folder))
