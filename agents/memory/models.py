"""A memory: one fact or preference of one person, kept for their later conversations."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxLengthValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.memory.limits import TEXT_MAX_CHARS
from platform_core.models import OrgOwnedModel


class MemoryOrigin(models.TextChoices):
    """Who wrote a memory: a run's model (the ``remember`` tool), the extraction after a run, or the person."""

    AGENT = "agent", _("Remembered by an agent")
    EXTRACTED = "extracted", _("Noted after a conversation")
    PERSON = "person", _("Written by you")


class Memory(OrgOwnedModel):
    """One thing a person told an agent to keep (or wrote themselves), read only for that person."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("person"), on_delete=models.CASCADE, related_name="+"
    )
    text = models.TextField(_("text"), validators=[MaxLengthValidator(TEXT_MAX_CHARS)])
    # The text's search terms (agents.knowledge.terms.search_terms), space-separated: what recall ranks.
    terms = models.TextField(_("search terms"), blank=True, editable=False)
    origin = models.CharField(
        _("written by"), max_length=16, choices=MemoryOrigin.choices, default=MemoryOrigin.AGENT
    )
    agent = models.ForeignKey(
        "agents.Agent",
        verbose_name=_("agent"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    conversation = models.ForeignKey(
        "agents.Conversation",
        verbose_name=_("conversation"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    recalled_at = models.DateTimeField(_("last given to a model"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("memory")
        verbose_name_plural = _("memories")
        ordering = ["-updated_at", "-created_at"]
        indexes = [models.Index(fields=["organization", "user", "-updated_at"], name="memory_of_person")]

    def __str__(self) -> str:
        # Never the text: the audit log keeps this as its target's name.
        return f"memory {self.pk}"
