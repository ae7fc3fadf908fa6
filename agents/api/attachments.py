"""``/api/v1/orgs/<slug>/attachments/``: files to attach to chat messages, uploaded before they are sent.

A member uploads files (``multipart/form-data``, ``file`` or several ``files``), each answered with its
outcome; an upload is pending until a message is sent with it, then it belongs to that message's
conversation. The caller sees only their own pending uploads and the attachments of their own
conversations, and only while a member (a superuser who is not one is refused like anyone else): any
other attachment is the 404 of a missing one. A pending upload may be deleted; a sent one goes with its
conversation. Uploads, downloads and deletions are audited.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import TooManyFilesSent
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponseBase
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.attachment_serializers import (
    AttachmentSerializer,
    AttachmentUploadReportSerializer,
    AttachmentUploadSerializer,
)
from agents.api.views import Conflict
from agents.attachments.download import attachment_file_response
from agents.attachments.limits import attachment_limits
from agents.attachments.models import Attachment
from agents.attachments.refusals import AttachmentRefusal, AttachmentRefused
from agents.attachments.selectors import attachments_visible_to
from agents.attachments.services import (
    AttachmentStored,
    AttachmentUpload,
    attachment_delete,
    attachment_download_record,
    attachment_upload,
)
from agents.attachments.uploads import AttachmentUploadGuard
from agents.knowledge.formats import RefusalCode
from platform_core.api_errors import StorageUnavailable
from platform_core.identity.api_keys.scopes import Scope
from platform_core.request_meta import client_ip
from platform_core.stored_files import StoredFileMissing, StoredFileUnreachable
from platform_core.tenancy.scoping import IsOrgMember, OrgScopedViewMixin


class IsMemberOfOrg(permissions.BasePermission):
    """A member of the URL's organisation: attachments are their conversations', so a superuser who is not
    a member gets the 404 of a missing organisation, as in the chat."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if getattr(request, "org_membership", None) is None:
            raise Http404("No such organisation.")
        return True


@extend_schema_view(
    list=extend_schema(
        summary="The caller's attachments: their pending uploads and those of their conversations",
        parameters=[
            OpenApiParameter("status", str, enum=["pending", "bound"], description="only these"),
            OpenApiParameter("conversation", OpenApiTypes.UUID, description="only this conversation's"),
        ],
    ),
    retrieve=extend_schema(summary="One attachment (404 for one the caller may not see)"),
    destroy=extend_schema(
        summary="Delete a pending upload and its file (409 once sent: it goes with its conversation)"
    ),
)
class AttachmentViewSet(
    OrgScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Files attached in the chat, as the caller may see them."""

    queryset = Attachment.objects.all()
    serializer_class = AttachmentSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsMemberOfOrg]
    api_key_write_scope = Scope.CHAT
    upload_guard: AttachmentUploadGuard | None = None

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return Attachment.objects.none()
        return attachments_visible_to(organization_id=self.org.pk, user=self.request.user)

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.action != "list":
            return queryset
        wanted = self.request.query_params.get("status", "")
        if wanted == "pending":
            queryset = queryset.filter(bound_at__isnull=True)
        elif wanted == "bound":
            queryset = queryset.filter(bound_at__isnull=False)
        elif wanted:
            raise ValidationError({"status": [_("Use pending or bound.")]})
        conversation = self.request.query_params.get("conversation", "")
        if conversation:
            try:
                conversation_id = uuid.UUID(conversation)
            except ValueError as exc:
                raise ValidationError({"conversation": [_("Not a conversation id.")]}) from exc
            queryset = queryset.filter(conversation_id=conversation_id)
        return queryset.order_by("-created_at", "pk")

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        """An upload's body is watched as it is read (:mod:`agents.attachments.uploads`): a file over the
        limit is not kept, and a body cut off before its last file ended is noticed."""
        if request.method == "POST":
            self.upload_guard = AttachmentUploadGuard(
                request, max_file_bytes=attachment_limits().max_file_bytes
            )
            request.upload_handlers = [self.upload_guard, *request.upload_handlers]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        summary="Upload one or several files to attach to a message",
        description=(
            "`multipart/form-data`, one file in `file` or several in `files`. Every file is answered with "
            "its outcome: stored (pending until a message is sent with it), or refused with a `code` and "
            "a `message` in the request's language (nothing of it stored). What a file is comes from its "
            "bytes, never from its name or the type the client sends. 201 when at least one file was "
            "stored; 400 when none was, with every file's outcome; 400 with `code` `incomplete_upload` "
            "(and nothing stored) when the body ended before its last file did."
        ),
        request={"multipart/form-data": AttachmentUploadSerializer},
        responses={
            201: AttachmentUploadReportSerializer,
            400: OpenApiResponse(AttachmentUploadReportSerializer, description="Nothing stored"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            data = request.data
        except TooManyFilesSent as exc:
            limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
            raise ValidationError(
                {"files": [_("Send at most %(limit)s files at once.") % {"limit": limit}]}
            ) from exc
        guard = self.upload_guard
        if guard is not None and guard.interrupted:
            refused = AttachmentRefused(AttachmentRefusal.INCOMPLETE_UPLOAD)
            return Response(
                {"detail": refused.message, "code": refused.code}, status=status.HTTP_400_BAD_REQUEST
            )
        serializer = AttachmentUploadSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        uploads: list[UploadedFile] = [
            *([serializer.validated_data["file"]] if "file" in serializer.validated_data else []),
            *serializer.validated_data.get("files", []),
        ]
        skipped = guard.skipped if guard is not None else []
        if not uploads and not skipped:
            raise ValidationError({"file": [_("Send a file in “file”, or several in “files”.")]})
        outcomes = []
        for upload in uploads:
            file_name = upload.name or ""
            done = attachment_upload(
                organization=self.org,
                user=request.user,
                name=file_name,
                content=upload,
                ip_address=client_ip(request),
            )
            outcomes.append(self._outcome(done, file_name))
        limit = attachment_limits().max_file_bytes
        for skip in skipped:
            outcomes.append(
                self._outcome(AttachmentRefused(RefusalCode.TOO_LARGE, {"limit": limit}), skip.file_name)
            )
        stored = any(line["outcome"] == "stored" for line in outcomes)
        code = status.HTTP_201_CREATED if stored else status.HTTP_400_BAD_REQUEST
        return Response({"files": outcomes}, status=code)

    def _outcome(self, upload: AttachmentUpload, file_name: str) -> dict[str, Any]:
        """One file's line of an upload's answer."""
        if isinstance(upload, AttachmentStored):
            return {
                "file": file_name,
                "outcome": "stored",
                "code": "",
                "message": _("Stored; it is sent with your next message."),
                "attachment": AttachmentSerializer(
                    upload.attachment, context=self.get_serializer_context()
                ).data,
            }
        return {
            "file": file_name,
            "outcome": "refused",
            "code": upload.code,
            "message": upload.message,
            "attachment": None,
        }

    def perform_destroy(self, instance: Attachment) -> None:
        done = attachment_delete(
            attachment=instance, actor=self.request.user, ip_address=client_ip(self.request)
        )
        if isinstance(done, AttachmentRefused):
            raise Conflict(
                _("This file was sent with a message: it stays with its conversation and is deleted with it.")
            )

    @extend_schema(
        summary="Download an attachment's file (its uploader, or its conversation's owner; 404 for anyone else)",
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such attachment, or the caller may not see it"),
        },
    )
    @action(detail=True, methods=["get"])
    def download(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        attachment = self.get_object()
        response = attachment_file_response(attachment)
        if isinstance(response, StoredFileMissing):
            raise Http404("No such attachment.")
        if isinstance(response, StoredFileUnreachable):
            raise StorageUnavailable()
        attachment_download_record(attachment=attachment, actor=request.user, ip_address=client_ip(request))
        return response

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """A download answers whatever the client accepts (its errors in JSON)."""
        return super().perform_content_negotiation(request, force=force or self.action == "download")
