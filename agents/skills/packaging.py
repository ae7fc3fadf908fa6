"""A skill as a folder in a .zip: ``SKILL.md`` (YAML front matter with ``name`` and ``description``, then
the Markdown body) and the skill's other files, the open Agent Skills layout
(https://agentskills.io/specification), so that skills written for other tools import as they are.

Reading refuses, with a message the admin can act on, anything the platform would not keep: no
``SKILL.md``, front matter without a name or a description, more than one skill, a binary file, a file
over the size limit, too many files, a path leaving the folder. Front matter besides the name and the
description (``license``, ``metadata``, ``allowed-tools``...) is kept as it is and written back on
export, and an export read again gives the same skill: :func:`skill_folder_zip` and
:func:`skill_folder_read` round-trip.
"""

from __future__ import annotations

import io
import json
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.skills.limits import (
    BODY_MAX_BYTES,
    FILE_MAX_BYTES,
    MAX_FILES,
    SKILL_FILE,
    file_path_problem,
    text_of,
)

ZIP_MAX_BYTES = 16 * 1024 * 1024
# Entries a zip may list at all (files the import skips included): a bound on the work a zip can ask.
ZIP_MAX_ENTRIES = 4 * MAX_FILES
# What archivers add beside the folder: skipped, never imported.
_SKIPPED_PARTS = ("__MACOSX", ".DS_Store", "Thumbs.db")
_DELIMITER = "---"
NO_FRONT_MATTER = gettext_lazy(
    "SKILL.md must start with its front matter: a line “---”, then “name:” and “description:”, then a "
    "line “---”."
)
# Exports are the same bytes for the same skill: their entries carry a fixed time.
_EXPORT_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class SkillFolder:
    """A skill's folder: ``SKILL.md``'s front matter and body, and the other files (path -> text)."""

    name: str
    description: str
    body: str
    front_matter: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FolderRefused:
    """Why a zip is no skill folder the platform keeps (in the active language)."""

    message: str


def _size(number: int) -> str:
    return f"{number // 1024} KiB"


def skill_md_parse(text: str) -> tuple[dict[str, Any], str] | FolderRefused:
    """``SKILL.md``'s front matter (a mapping) and body (without the blank lines that open it)."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != _DELIMITER:
        return FolderRefused(str(NO_FRONT_MATTER))
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == _DELIMITER), None)
    if end is None:
        return FolderRefused(str(NO_FRONT_MATTER))
    try:
        front_matter = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return FolderRefused(_("SKILL.md's front matter is not valid YAML%(where)s.") % {"where": where})
    if not isinstance(front_matter, dict):
        return FolderRefused(str(NO_FRONT_MATTER))
    body = "".join(lines[end + 1 :]).lstrip("\r\n")
    return front_matter, body


def _json_safe(value: Any) -> Any:
    """A front-matter value as JSON keeps it (YAML dates become their ISO text)."""
    return json.loads(json.dumps(value, default=str))


def skill_folder_of(skill_md: str, files: Mapping[str, str]) -> SkillFolder | FolderRefused:
    """The folder whose ``SKILL.md`` reads ``skill_md``, with ``files``."""
    parsed = skill_md_parse(skill_md)
    if isinstance(parsed, FolderRefused):
        return parsed
    front_matter, body = parsed
    name, description = front_matter.pop("name", None), front_matter.pop("description", None)
    if not isinstance(name, str) or not name.strip():
        return FolderRefused(_("SKILL.md's front matter has no “name”."))
    if not isinstance(description, str) or not description.strip():
        return FolderRefused(_("SKILL.md's front matter has no “description”."))
    return SkillFolder(
        name=name.strip(),
        description=description.strip(),
        body=body,
        front_matter={str(key): _json_safe(value) for key, value in front_matter.items()},
        files=dict(files),
    )


def _skipped(name: str) -> bool:
    return any(part in _SKIPPED_PARTS or part.startswith("._") for part in name.split("/"))


def _root(names: list[str]) -> str | FolderRefused:
    """The folder the zip holds the skill in ("" when ``SKILL.md`` is at its top)."""
    if SKILL_FILE in names:
        return ""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1:
        (top,) = tops
        if f"{top}/{SKILL_FILE}" in names:
            return f"{top}/"
    if any(name.endswith(f"/{SKILL_FILE}") for name in names) and len(tops) > 1:
        return FolderRefused(_("The zip holds more than one folder: import one skill at a time."))
    return FolderRefused(_("The zip has no SKILL.md: it must hold one folder with the skill's SKILL.md."))


def skill_folder_read(data: bytes) -> SkillFolder | FolderRefused:
    """The skill a zip holds: one folder with ``SKILL.md`` and its other files (or those at its top)."""
    if len(data) > ZIP_MAX_BYTES:
        return FolderRefused(
            _("The zip is %(size)s; at most %(limit)s is read.")
            % {"size": _size(len(data)), "limit": _size(ZIP_MAX_BYTES)}
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        return FolderRefused(_("This is not a .zip file."))
    with archive:
        entries = archive.infolist()
        if len(entries) > ZIP_MAX_ENTRIES:
            return FolderRefused(
                _("The zip has more than %(limit)d entries: a skill has at most %(files)d files.")
                % {"limit": ZIP_MAX_ENTRIES, "files": MAX_FILES}
            )
        kept = [info for info in entries if not info.is_dir() and not _skipped(info.filename)]
        root = _root([info.filename for info in kept])
        if isinstance(root, FolderRefused):
            return root
        if len(kept) - 1 > MAX_FILES:
            return FolderRefused(
                _("The skill has %(count)d files besides SKILL.md; at most %(limit)d are kept.")
                % {"count": len(kept) - 1, "limit": MAX_FILES}
            )
        texts: dict[str, str] = {}
        for info in kept:
            read = _entry_text(archive, info, info.filename.removeprefix(root))
            if isinstance(read, FolderRefused):
                return read
            texts[info.filename.removeprefix(root)] = read
    skill_md = texts.pop(SKILL_FILE)
    return skill_folder_of(skill_md, texts)


def _entry_text(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> str | FolderRefused:
    """The text of one entry, refused when it is not a plain UTF-8 text file within the limits."""
    if path != SKILL_FILE and (problem := file_path_problem(path)) is not None:
        return FolderRefused(problem)
    if info.flag_bits & 0x1:
        return FolderRefused(
            _("“%(path)s” is encrypted: export the skill without a password.") % {"path": path}
        )
    if stat.S_ISLNK(info.external_attr >> 16):
        return FolderRefused(
            _("“%(path)s” is a symbolic link: a skill holds plain files only.") % {"path": path}
        )
    limit = BODY_MAX_BYTES if path == SKILL_FILE else FILE_MAX_BYTES
    if info.file_size > limit:
        return _too_large(path, info.file_size, limit)
    try:
        with archive.open(info) as handle:
            data = handle.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
        return FolderRefused(_("“%(path)s” cannot be read from the zip.") % {"path": path})
    if len(data) > limit:  # the entry's header understated it
        return _too_large(path, len(data), limit)
    text = text_of(data)
    if text is None:
        return FolderRefused(
            _("“%(path)s” is not a text file (UTF-8): a skill holds text files only, such as Markdown.")
            % {"path": path}
        )
    return text


def _too_large(path: str, size: int, limit: int) -> FolderRefused:
    return FolderRefused(
        _("“%(path)s” is larger than %(limit)s, the most a skill's file may have.")
        % {"path": path, "limit": _size(limit)}
    )


def skill_md_text(folder: SkillFolder) -> str:
    """``SKILL.md``: the front matter (name, description, then the rest as imported) and the body."""
    matter = {"name": folder.name, "description": folder.description, **folder.front_matter}
    dumped = yaml.safe_dump(matter, sort_keys=False, allow_unicode=True, width=1_000_000)
    return (
        f"{_DELIMITER}\n{dumped}{_DELIMITER}\n\n{folder.body}"
        if folder.body
        else f"{_DELIMITER}\n{dumped}{_DELIMITER}\n"
    )


def skill_folder_zip(folder: SkillFolder) -> bytes:
    """The skill as a .zip holding its folder, named after it (the same bytes for the same skill)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        entries = {SKILL_FILE: skill_md_text(folder), **dict(sorted(folder.files.items()))}
        for path, text in entries.items():
            info = zipfile.ZipInfo(f"{folder.name}/{path}", date_time=_EXPORT_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, text.encode())
    return buffer.getvalue()
