"""Serializers of the chat attachments' API: an attachment, an upload's request and its per-file outcomes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.attachments.models import Attachment


def _download_url(context: Mapping[str, Any], attachment: Attachment) -> str:
    """The API's download route of the attachment, under the request's organisation."""
    org = context.get("org")
    slug = org.slug if org is not None else attachment.organization.slug
    return reverse("attachment-download", kwargs={"org_slug": slug, "pk": attachment.pk})


class AttachmentSerializer(serializers.ModelSerializer):
    """A file attached in the chat: what its bytes were found to be, and whether it was sent yet."""

    status = serializers.SerializerMethodField(
        help_text=_("pending: uploaded, not sent with a message yet; bound: sent with a message.")
    )
    download_url = serializers.SerializerMethodField(help_text=_("Where its file is downloaded."))

    class Meta:
        model = Attachment
        fields = [
            "id",
            "name",
            "kind",
            "format",
            "content_type",
            "size",
            "sha256",
            "status",
            "conversation",
            "message",
            "created_at",
            "bound_at",
            "download_url",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=["pending", "bound"]))
    def get_status(self, attachment: Attachment) -> str:
        return "pending" if attachment.pending else "bound"

    def get_download_url(self, attachment: Attachment) -> str:
        return _download_url(self.context, attachment)


class MessageAttachmentSerializer(serializers.ModelSerializer):
    """A file sent with a message, as the conversation's history shows it."""

    download_url = serializers.SerializerMethodField(help_text=_("Where its file is downloaded."))

    class Meta:
        model = Attachment
        fields = ["id", "name", "kind", "format", "content_type", "size", "download_url"]
        read_only_fields = fields

    def get_download_url(self, attachment: Attachment) -> str:
        return _download_url(self.context, attachment)


class AttachmentUploadSerializer(serializers.Serializer):
    """``multipart/form-data`` with a file in ``file``, or several in ``files`` (repeat the field)."""

    file = serializers.FileField(required=False, help_text=_("One file to attach."))
    files = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        help_text=_("Several files to attach, each answered with its own outcome."),
    )


class AttachmentOutcomeSerializer(serializers.Serializer):
    """What became of one uploaded file."""

    file = serializers.CharField(help_text=_("The uploaded file's name."))
    outcome = serializers.ChoiceField(
        choices=["stored", "refused"],
        help_text=_("stored: kept, pending until sent with a message; refused: nothing was stored."),
    )
    code = serializers.CharField(
        help_text=_(
            "Why it was refused (empty when stored): too_large, unknown_format, extension_mismatch, "
            "empty, malformed, encrypted, not_text, unreadable_package, unpacks_too_large, "
            "compression_too_high, too_many_members, too_many_pixels or quota_exceeded."
        )
    )
    message = serializers.CharField(help_text=_("The outcome in the request's language."))
    attachment = AttachmentSerializer(allow_null=True, help_text=_("The stored attachment (null: refused)."))


class AttachmentUploadReportSerializer(serializers.Serializer):
    files = AttachmentOutcomeSerializer(many=True)
