"""What a skill may hold, as the Agent Skills layout (https://agentskills.io/specification) and this
platform bound it: the checks the models, the services and the import share."""

from __future__ import annotations

from pathlib import PurePosixPath

from django.core.validators import RegexValidator
from django.utils.translation import gettext_lazy as _

NAME_MAX_CHARS = 64
DESCRIPTION_MAX_CHARS = 1024
BODY_MAX_BYTES = 256 * 1024
FILE_MAX_BYTES = 256 * 1024
MAX_FILES = 50
PATH_MAX_CHARS = 255
SKILL_FILE = "SKILL.md"

skill_name_validator = RegexValidator(
    r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
    _("Use lowercase letters, digits and single hyphens, not first nor last (as in “purchase-approval”)."),
)


def file_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a skill's file (``None`` when it can): a relative path with forward
    slashes, inside the skill's folder, other than ``SKILL.md`` itself."""
    if not path or len(path) > PATH_MAX_CHARS:
        return str(_("A file's path has 1 to %(limit)d characters.") % {"limit": PATH_MAX_CHARS})
    parts = PurePosixPath(path).parts
    if (
        "\\" in path
        or path.startswith("/")
        or path.endswith("/")
        or any(part in ("", ".", "..") for part in path.split("/"))
        or any(ord(ch) < 32 for ch in path)
    ):
        return str(_("“%(path)s” is not a relative path inside the skill's folder.") % {"path": path})
    if parts == (SKILL_FILE,):
        return str(_("SKILL.md is the skill itself (its description and body), not one of its files."))
    return None


def text_of(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 text (``None`` for a binary file: not UTF-8, or holding NUL)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
