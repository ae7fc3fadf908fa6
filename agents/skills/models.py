"""Skills, their immutable versions and each version's files.

A :class:`Skill` holds its current name, description and body and the number of its current version;
every change of them (or of its files) adds a :class:`SkillVersion`, a copy never changed afterwards, so
a run's call log can name the version it read. A version's :class:`SkillFile` rows are the text files
of the skill's folder besides ``SKILL.md`` (templates, examples, references).
"""

from __future__ import annotations

import uuid

from django.core.validators import MaxLengthValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.skills.limits import (
    DESCRIPTION_MAX_CHARS,
    NAME_MAX_CHARS,
    PATH_MAX_CHARS,
    skill_name_validator,
)
from platform_core.model_fields import optional_user_key
from platform_core.models import OrgOwnedModel

NAME_HELP = _(
    "Lowercase letters, digits and hyphens, at most 64 characters (as in “purchase-approval”); the model "
    "reads the skill by this name."
)
DESCRIPTION_HELP = _(
    "What the skill does and when to use it: the model sees only the name and this description until it "
    "reads the skill."
)
BODY_HELP = _("The procedure itself, in Markdown: what the model reads when it decides it needs the skill.")


class Skill(OrgOwnedModel):
    """A procedure of the organisation that the agents allowed it read on demand."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(
        _("name"), max_length=NAME_MAX_CHARS, validators=[skill_name_validator], help_text=NAME_HELP
    )
    description = models.TextField(
        _("description"), validators=[MaxLengthValidator(DESCRIPTION_MAX_CHARS)], help_text=DESCRIPTION_HELP
    )
    body = models.TextField(_("body"), blank=True, help_text=BODY_HELP)
    # The SKILL.md front matter besides name and description (license, compatibility, metadata...), kept
    # as imported so that an export gives it back.
    front_matter = models.JSONField(_("other front matter"), default=dict, blank=True, editable=False)
    is_active = models.BooleanField(
        _("active"), default=True, help_text=_("Off: no agent lists or reads it.")
    )
    version = models.PositiveIntegerField(_("version"), default=0, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("skill")
        verbose_name_plural = _("skills")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="unique_skill_name")]

    def __str__(self) -> str:
        return self.name


class SkillVersion(OrgOwnedModel):
    """One version of a skill, as it was saved: never changed afterwards."""

    skill = models.ForeignKey(
        Skill, verbose_name=_("skill"), on_delete=models.CASCADE, related_name="versions"
    )
    number = models.PositiveIntegerField(_("version"))
    name = models.CharField(_("name"), max_length=NAME_MAX_CHARS)
    description = models.TextField(_("description"))
    body = models.TextField(_("body"), blank=True)
    front_matter = models.JSONField(_("other front matter"), default=dict, blank=True)
    created_by = optional_user_key(_("saved by"))
    created_at = models.DateTimeField(_("saved at"), auto_now_add=True)

    class Meta:
        verbose_name = _("skill version")
        verbose_name_plural = _("skill versions")
        ordering = ["skill", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="unique_skill_version_number")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.number}"


class SkillFile(OrgOwnedModel):
    """A text file of a skill's version (its path relative to the skill's folder)."""

    version = models.ForeignKey(
        SkillVersion, verbose_name=_("version"), on_delete=models.CASCADE, related_name="files"
    )
    path = models.CharField(_("path"), max_length=PATH_MAX_CHARS)
    content = models.TextField(_("content"), blank=True)
    size = models.PositiveIntegerField(_("size (bytes)"), default=0)

    class Meta:
        verbose_name = _("skill file")
        verbose_name_plural = _("skill files")
        ordering = ["version", "path"]
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="unique_skill_file_path")]

    def __str__(self) -> str:
        return self.path
