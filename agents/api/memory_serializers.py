"""Serializers of the memories API: one of the caller's memories, and what a create or a change sets.

A memory's text is judged by the services (:func:`agents.memory.services.memory_text_problem`); here only
its shape is.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from agents.memory.limits import TEXT_MAX_CHARS
from agents.memory.models import Memory


class MemorySerializer(serializers.ModelSerializer):
    """One of the caller's memories: its text, who wrote it, where, and when a model was last given it."""

    text = serializers.CharField(
        max_length=TEXT_MAX_CHARS,
        help_text=_("The fact or preference, in a sentence or two (at most 500 characters)."),
    )
    agent_name = serializers.CharField(
        source="agent.name",
        read_only=True,
        allow_null=True,
        help_text=_(
            "The agent that remembered or noted it (null: written by the person, or the agent deleted)."
        ),
    )

    class Meta:
        model = Memory
        fields = [
            "id",
            "text",
            "origin",
            "agent",
            "agent_name",
            "conversation",
            "created_at",
            "updated_at",
            "recalled_at",
        ]
        read_only_fields = [field for field in fields if field != "text"]
        extra_kwargs = {
            "origin": {
                "help_text": _(
                    "agent: remembered by an agent in a conversation (its remember tool); extracted: noted by "
                    "the agent's model after an answer; person: written by you."
                )
            },
            "conversation": {
                "help_text": _("The conversation it was remembered in (null: none, or deleted).")
            },
            "recalled_at": {"help_text": _("When it was last given to a model (null: never yet).")},
        }
