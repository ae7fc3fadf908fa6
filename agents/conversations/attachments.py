"""The checks a message with attachments passes before anything is recorded: the files are the sender's
own pending uploads, fit the per-message limit, and, when one is an image, the agent's model reads images
(no image is sent to a model that would drop it; the sender is told instead)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from agents.attachments.limits import attachment_limits
from agents.attachments.models import AttachmentKind
from agents.attachments.refusals import AttachmentRefusal, AttachmentRefused
from agents.attachments.selectors import attachments_bindable
from agents.conversations.commands import PostMessage, Refused
from agents.runtime import agent_reads_images

__all__ = [
    "ATTACHMENT_CODES",
    "MAX_ATTACHMENTS",
    "attachment_ids_of",
    "attachments_refusal",
    "attachments_with_follow_up",
]

MAX_ATTACHMENTS = 20
"""The most files one message may carry."""

#: The refusals of a message for its attachments (an entry point answers them as a fault of its
#: ``attachments``): these of this module and those of ``attachments_bind``.
ATTACHMENT_CODES = frozenset(
    {
        "bad_attachments",
        "too_many_attachments",
        "model_cannot_read_images",
        "attachments_with_follow_up",
        *(refusal.value for refusal in AttachmentRefusal),
    }
)


def attachment_ids_of(value: object) -> tuple[str, ...] | Refused:
    """The attachment ids an entry point was sent (``None``: none), or why they are not a list of ids."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return Refused("bad_attachments", _("attachments must be a list of attachment ids."))
    if len(value) > MAX_ATTACHMENTS:
        return Refused(
            "too_many_attachments",
            _("A message carries at most %(limit)d files; this one has %(count)d.")
            % {"limit": MAX_ATTACHMENTS, "count": len(value)},
        )
    return tuple(value)


def attachments_refusal(command: PostMessage) -> Refused | None:
    """Why ``command``'s attachments may not be sent, or ``None`` when they may."""
    checked = attachments_bindable(
        organization_id=command.sender.organization_id,
        user=command.sender.user,
        attachment_ids=command.attachment_ids,
        max_message_bytes=attachment_limits().max_message_bytes,
    )
    if isinstance(checked, AttachmentRefused):
        return Refused(checked.code, checked.message)
    images = [a for a in checked.attachments if a.kind == AttachmentKind.IMAGE]
    if images and not agent_reads_images(command.conversation.agent):
        return Refused(
            "model_cannot_read_images",
            _(
                "This agent's model cannot read images (%(name)s): remove the image, or ask an agent whose "
                "model accepts images."
            )
            % {"name": images[0].name},
        )
    return None


def attachments_with_follow_up() -> Refused:
    """The refusal of files sent while the agent is still answering."""
    return Refused(
        "attachments_with_follow_up",
        _(
            "Files are sent with a new question, not while the agent is answering: send them after its answer."
        ),
    )
