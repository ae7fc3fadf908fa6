"""Writes of skills, each org-scoped, in one transaction with its audit row: create, update (switching
on and off too), delete, and import of a skill folder's .zip.

A change of a skill's name, description, body, front matter or files adds a new immutable version (its
files copied with it); switching it on or off does not. The audit log names the skill, its version and
which fields changed, never their text. The organisation's skill library connector is made with its
first skill (:func:`agents.skills.library.skill_library_connector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from agents.skills.library import skill_library_connector
from agents.skills.limits import (
    BODY_MAX_BYTES,
    DESCRIPTION_MAX_CHARS,
    FILE_MAX_BYTES,
    MAX_FILES,
    NAME_MAX_CHARS,
    file_path_problem,
    skill_name_validator,
)
from agents.skills.models import Skill, SkillFile, SkillVersion
from agents.skills.packaging import FolderRefused, skill_folder_read
from agents.skills.selectors import skill_files_current
from platform_core.audit.log import audit_log_write
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "SkillImport",
    "SkillImportRefused",
    "SkillImported",
    "skill_create",
    "skill_delete",
    "skill_import",
    "skill_problems",
    "skill_update",
]

# What a version is made of: a change of any of them makes a new one.
VERSIONED = ("name", "description", "body", "front_matter", "files")


def skill_problems(
    *,
    organization: Organization,
    name: str,
    description: str,
    body: str,
    files: Mapping[str, str],
    skill: Skill | None = None,
) -> dict[str, list[str]]:
    """What is wrong with a skill's content, by field (empty when nothing is): the name (its form, and
    taken by another skill of the organisation), the description, the body's and the files' sizes, the
    files' number and paths."""
    problems: dict[str, list[str]] = {}

    def add(field: str, message: str) -> None:
        problems.setdefault(field, []).append(message)

    if not name or len(name) > NAME_MAX_CHARS:
        add("name", _("A skill's name has 1 to %(limit)d characters.") % {"limit": NAME_MAX_CHARS})
    else:
        try:
            skill_name_validator(name)
        except ValidationError as exc:
            problems.setdefault("name", []).extend(exc.messages)
    if "name" not in problems:
        taken = Skill.objects.for_org(organization).filter(name=name)
        if skill is not None:
            taken = taken.exclude(pk=skill.pk)
        if taken.exists():
            add("name", _("The organisation already has a skill of this name."))
    if not description.strip():
        add("description", _("Say what the skill does and when to use it: the model chooses by it."))
    elif len(description) > DESCRIPTION_MAX_CHARS:
        add(
            "description",
            _("A description has at most %(limit)d characters.") % {"limit": DESCRIPTION_MAX_CHARS},
        )
    if len(body.encode()) > BODY_MAX_BYTES:
        add("body", _("A skill's body has at most %(limit)d KiB.") % {"limit": BODY_MAX_BYTES // 1024})
    if len(files) > MAX_FILES:
        add("files", _("A skill has at most %(limit)d files.") % {"limit": MAX_FILES})
    for path, content in files.items():
        problem = file_path_problem(path)
        if problem is None and "\x00" in content:
            problem = _("“%(path)s” is not a text file.") % {"path": path}
        if problem is None and len(content.encode()) > FILE_MAX_BYTES:
            problem = _("“%(path)s” is larger than %(limit)d KiB.") % {
                "path": path,
                "limit": FILE_MAX_BYTES // 1024,
            }
        if problem is not None:
            add("files", problem)
    return problems


def _check(organization: Organization, skill: Skill | None, **content: Any) -> None:
    problems = skill_problems(organization=organization, skill=skill, **content)
    if problems:
        raise ValidationError(problems)


def _version_add(skill: Skill, files: Mapping[str, str], actor: User | None) -> SkillVersion:
    """The skill's next version, a copy of its fields and ``files`` (the skill saved with its number)."""
    skill.version += 1
    skill.save()
    version = SkillVersion.objects.create(
        organization_id=skill.organization_id,
        skill=skill,
        number=skill.version,
        name=skill.name,
        description=skill.description,
        body=skill.body,
        front_matter=skill.front_matter,
        created_by=actor if actor is not None and actor.is_authenticated else None,
    )
    SkillFile.objects.bulk_create(
        SkillFile(
            organization_id=skill.organization_id,
            version=version,
            path=path,
            content=content,
            size=len(content.encode()),
        )
        for path, content in sorted(files.items())
    )
    return version


def _state(skill: Skill) -> dict[str, Any]:
    """A skill as its audit rows show it: never its text."""
    return {"name": skill.name, "version": skill.version, "is_active": skill.is_active}


def skill_create(
    *,
    organization: Organization,
    name: str,
    description: str,
    body: str = "",
    files: Mapping[str, str] | None = None,
    front_matter: Mapping[str, Any] | None = None,
    is_active: bool = True,
    actor: User | None,
    ip_address: str | None = None,
    audit_action: str = "skill.created",
) -> Skill:
    """A new skill at version 1 (``ValidationError`` says what is wrong, by field); the organisation's
    skill library connector is made with its first skill."""
    files = dict(files or {})
    with transaction.atomic():
        _check(organization, None, name=name, description=description, body=body, files=files)
        skill_library_connector(organization=organization, actor=actor)
        skill = Skill(
            organization=organization,
            name=name,
            description=description,
            body=body,
            front_matter=dict(front_matter or {}),
            is_active=is_active,
        )
        _version_add(skill, files, actor)
        audit_log_write(
            organization=organization,
            actor=actor,
            action=audit_action,
            target=skill,
            after={**_state(skill), "files": len(files)},
            ip_address=ip_address,
        )
    return skill


def skill_update(
    *,
    skill: Skill,
    actor: User | None,
    name: str | None = None,
    description: str | None = None,
    body: str | None = None,
    files: Mapping[str, str] | None = None,
    front_matter: Mapping[str, Any] | None = None,
    is_active: bool | None = None,
    ip_address: str | None = None,
    audit_action: str = "skill.updated",
) -> list[str]:
    """Change a skill (``None``: leave that part as it is; ``files`` replaces all of them) and return
    what changed: a change of its content adds a version, switching it on or off does not; nothing
    changed writes nothing. ``ValidationError`` says what is wrong, by field."""
    with transaction.atomic():
        locked = Skill.objects.for_org(skill.organization_id).select_for_update().get(pk=skill.pk)
        current_files = skill_files_current(skill=locked)
        wanted: dict[str, Any] = {
            "name": locked.name if name is None else name,
            "description": locked.description if description is None else description,
            "body": locked.body if body is None else body,
            "front_matter": locked.front_matter if front_matter is None else dict(front_matter),
            "files": current_files if files is None else dict(files),
        }
        current = {
            "name": locked.name,
            "description": locked.description,
            "body": locked.body,
            "front_matter": locked.front_matter,
            "files": current_files,
        }
        changed = [field for field in VERSIONED if wanted[field] != current[field]]
        if is_active is not None and is_active != locked.is_active:
            changed.append("is_active")
        if not changed:
            return []
        organization = Organization.objects.get(pk=locked.organization_id)
        _check(
            organization,
            locked,
            name=wanted["name"],
            description=wanted["description"],
            body=wanted["body"],
            files=wanted["files"],
        )
        skill_library_connector(organization=organization, actor=actor)
        before = _state(locked)
        locked.name, locked.description = wanted["name"], wanted["description"]
        locked.body, locked.front_matter = wanted["body"], wanted["front_matter"]
        if is_active is not None:
            locked.is_active = is_active
        if set(changed) & set(VERSIONED):
            _version_add(locked, wanted["files"], actor)
        else:
            locked.save()
        audit_log_write(
            organization=organization,
            actor=actor,
            action=audit_action,
            target=locked,
            before=before,
            after={**_state(locked), "changed": changed},
            ip_address=ip_address,
        )
    for name_ in ("name", "description", "body", "front_matter", "is_active", "version", "updated_at"):
        setattr(skill, name_, getattr(locked, name_))
    return changed


def skill_delete(*, skill: Skill, actor: User | None, ip_address: str | None = None) -> None:
    """Delete a skill with its versions and files (agents allowed it lose it; call logs keep its name
    and the versions read)."""
    with transaction.atomic():
        audit_log_write(
            organization=Organization.objects.get(pk=skill.organization_id),
            actor=actor,
            action="skill.deleted",
            target=skill,
            before=_state(skill),
            ip_address=ip_address,
        )
        skill.delete()


@dataclass(frozen=True, slots=True)
class SkillImported:
    """The zip's skill is the organisation's: ``created`` a new one, else a new version of the skill of
    its name (``changed`` false: it was that skill already, nothing was written)."""

    skill: Skill
    created: bool
    changed: bool


@dataclass(frozen=True, slots=True)
class SkillImportRefused:
    """Nothing was imported; ``message`` says why (in the active language), ``problems`` by field when
    the skill itself is refused (its name, its description...)."""

    message: str
    problems: Mapping[str, list[str]] = field(default_factory=dict)


SkillImport = SkillImported | SkillImportRefused


def skill_import(
    *, organization: Organization, data: bytes, actor: User | None, ip_address: str | None = None
) -> SkillImport:
    """Import a skill folder's .zip (:mod:`agents.skills.packaging`): a new skill, or a new version of
    the organisation's skill of that name (its files replaced by the zip's). A new skill is active but
    allowed to no agent yet."""
    folder = skill_folder_read(data)
    if isinstance(folder, FolderRefused):
        return SkillImportRefused(folder.message)
    content: dict[str, Any] = {
        "name": folder.name,
        "description": folder.description,
        "body": folder.body,
        "files": dict(folder.files),
        "front_matter": dict(folder.front_matter),
    }
    existing = Skill.objects.for_org(organization).filter(name=folder.name).first()
    try:
        if existing is None:
            skill = skill_create(
                organization=organization,
                actor=actor,
                ip_address=ip_address,
                audit_action="skill.imported",
                **content,
            )
            return SkillImported(skill=skill, created=True, changed=True)
        changed = skill_update(
            skill=existing, actor=actor, ip_address=ip_address, audit_action="skill.imported", **content
        )
    except ValidationError as exc:
        problems = exc.message_dict
        message = " ".join(message for messages in problems.values() for message in messages)
        return SkillImportRefused(message, problems)
    return SkillImported(skill=existing, created=False, changed=bool(changed))
