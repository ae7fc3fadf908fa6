"""The attachments' bounds, from the settings (``ATTACHMENT_*``, ``platform_core/settings.py``), read when
they are needed so a test or an operator's change of a setting holds at once."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from agents.attachments.sniffing import SniffLimits


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    max_file_bytes: int
    max_message_bytes: int
    org_quota_bytes: int  # 0: no quota
    max_unpacked_bytes: int
    max_image_pixels: int
    pending_hours: int

    @property
    def sniffing(self) -> SniffLimits:
        return SniffLimits(
            max_bytes=self.max_file_bytes,
            max_unpacked=self.max_unpacked_bytes,
            max_pixels=self.max_image_pixels,
        )


def attachment_limits() -> AttachmentLimits:
    """The limits in force now."""
    return AttachmentLimits(
        max_file_bytes=int(settings.ATTACHMENT_MAX_FILE_BYTES),
        max_message_bytes=int(settings.ATTACHMENT_MAX_MESSAGE_BYTES),
        org_quota_bytes=int(settings.ATTACHMENT_ORG_QUOTA_BYTES),
        max_unpacked_bytes=int(settings.ATTACHMENT_MAX_UNPACKED_BYTES),
        max_image_pixels=int(settings.ATTACHMENT_MAX_IMAGE_PIXELS),
        pending_hours=int(settings.ATTACHMENT_PENDING_HOURS),
    )
