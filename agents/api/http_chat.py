"""Chat over HTTP (``/api/v1/orgs/<org_slug>/conversations/<id>/...``): post a message, stream a run's
events as Server-Sent Events, cancel a run. The same runs, events and seq as the websocket's.

Posting and cancelling are conversation commands (:mod:`agents.conversations`): recorded in the
request's thread (a refusal is the view's error response), delivered to the run manager on the event loop.
"""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import translation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.views import APIView

from agents.api.async_drf import ContinueOnLoop
from agents.api.chat_scope import CHAT_SCOPE, HasChatScope
from agents.api.stream_negotiation import EventStreamNegotiation
from agents.api.views import Conflict, MessageViewSet
from agents.chat_http.run_stream import run_stream_sse
from agents.chat_http.sse import SSE_CONTENT_TYPE, SSE_HEADERS, PositionRefused, stream_position_parse
from agents.conversations.attachments import ATTACHMENT_CODES, MAX_ATTACHMENTS
from agents.conversations.commands import (
    Cancel,
    Cancelled,
    CancelRequested,
    FollowUpQueued,
    NothingToCancel,
    PostMessage,
    Refused,
    Sender,
)
from agents.conversations.handling import command_deliver, command_record
from agents.models import Conversation, Run
from agents.runs.language import interface_language_of_request
from platform_core.identity.api_keys.scopes import request_credential
from platform_core.identity.api_keys.watch import KeyWatch
from platform_core.tenancy.scoping import IsOrgMember, OrgScopedViewMixin

CHAT_PERMISSIONS = [permissions.IsAuthenticated, IsOrgMember, HasChatScope]


class TooManyRuns(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_runs"


def refusal_as_api_error(refused: Refused) -> APIException:
    """The HTTP error of a message that could not start or join a run."""
    if refused.code in ("empty_message", "message_too_large"):
        return ValidationError({"content": [refused.message]}, code=refused.code)
    if refused.code in ATTACHMENT_CODES:
        return ValidationError({"attachments": [refused.message]}, code=refused.code)
    if refused.code == "too_many_runs":
        return TooManyRuns(refused.message)
    return Conflict(refused.message, code=refused.code)


def conversation_of_caller(view: Any) -> Conversation:
    """The URL's conversation if it is the caller's, in the URL's organisation (else 404)."""
    return get_object_or_404(
        Conversation.objects.select_related("agent"),
        pk=view.kwargs["conversation_id"],
        organization=view.org,
        user=view.request.user,
    )


class MessagePostSerializer(serializers.Serializer):
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)
    attachments = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        max_length=MAX_ATTACHMENTS,
        help_text="Ids of your uploads (POST attachments/) sent with the message; with a new question only.",
    )


class MessagePostedSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    conversation_id = serializers.UUIDField()
    message_id = serializers.IntegerField()
    follow_up = serializers.BooleanField(help_text="True when the message joined the run already answering.")
    stream_url = serializers.CharField(help_text="The run's Server-Sent Events stream.")
    cancel_url = serializers.CharField()


class ConversationMessagesViewSet(MessageViewSet):
    """``GET`` lists the conversation's messages; ``POST`` sends one: it starts a run, or, while a run is
    answering, it joins that run as a follow-up (as over the websocket). Answers 202 with the
    run's id and its stream's URL."""

    permission_classes = CHAT_PERMISSIONS
    api_key_scopes = {"create": CHAT_SCOPE}  # listing the messages needs read, like any list

    def get_permissions(self) -> list[Any]:
        if self.action == "list":  # reading is not chatting: the list keeps the list's permissions
            self.permission_classes = MessageViewSet.permission_classes
        return super().get_permissions()

    @extend_schema(
        request=MessagePostSerializer,
        responses={202: MessagePostedSerializer},
        description="Send a message: it starts a run, or, while a run is answering, joins that run as a "
        "follow-up (the run's stream shows an inject event). 202 with the run's id and stream URL.",
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        body = MessagePostSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation = conversation_of_caller(self)
        sender = Sender(
            organization_id=self.org.pk,
            user=request.user,
            via="http",
            language=interface_language_of_request(request),
        )
        attachment_ids = tuple(body.validated_data.get("attachments") or ())
        recorded = command_record(
            PostMessage(sender, conversation, body.validated_data["content"], attachment_ids=attachment_ids)
        )
        posted = recorded.result
        if isinstance(posted, Refused):
            raise refusal_as_api_error(posted)
        base = request.path.rstrip("/").rsplit("/", 1)[0]
        data = {
            "run_id": str(posted.run_id),
            "conversation_id": str(posted.conversation_id),
            "message_id": posted.message_id,
            "follow_up": isinstance(posted, FollowUpQueued),
            "stream_url": f"{base}/runs/{posted.run_id}/stream/",
            "cancel_url": f"{base}/runs/{posted.run_id}/cancel/",
        }

        async def then() -> JsonResponse:
            await command_deliver(recorded)
            return JsonResponse(data, status=status.HTTP_202_ACCEPTED)

        return ContinueOnLoop(then)


class _RunViewMixin(OrgScopedViewMixin):
    permission_classes = CHAT_PERMISSIONS
    kwargs: dict[str, Any]

    def run_of_caller(self) -> Run:
        conversation = conversation_of_caller(self)
        run = get_object_or_404(Run.objects.filter(conversation=conversation), pk=self.kwargs["run_id"])
        run.conversation = conversation  # found among the caller's own, with its agent
        return run


class RunStreamView(_RunViewMixin, APIView):
    """The run's events as Server-Sent Events: each stored frame of the websocket as ``data:`` with its
    ``seq`` as ``id:`` and its channel as ``event:``; replayed from the store, then live; ``: heartbeat``
    comments while nothing happens; the stream ends after the run's ``done``. Send the last id seen as
    ``Last-Event-ID`` (or ``?after_seq=``) to resume without losing or repeating anything. A stream
    opened with an API key ends, with an ``error`` event, once the key is revoked or expires."""

    action = "stream"  # an APIView has no action: named for the API key scope check
    api_key_scopes = {"stream": CHAT_SCOPE}
    content_negotiation_class = EventStreamNegotiation  # EventSource sends Accept: text/event-stream

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "Last-Event-ID",
                OpenApiTypes.INT,
                OpenApiParameter.HEADER,
                description="resume after this seq (the last SSE id received)",
            ),
            OpenApiParameter("after_seq", OpenApiTypes.INT, description="resume after this seq"),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="id: <seq>, event: <channel>, data: <the websocket frame>"
            )
        },
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> StreamingHttpResponse:
        run = self.run_of_caller()
        after = stream_position_parse(
            request.headers.get("Last-Event-ID"), request.query_params.get("after_seq")
        )
        if isinstance(after, PositionRefused):
            raise ValidationError({"after_seq": [after.message]})
        body = run_stream_sse(
            conversation_id=run.conversation_id,
            run_id=run.pk,
            after_seq=after,
            watch=KeyWatch.of(request_credential(request)),
            language=translation.get_language(),
        )
        return StreamingHttpResponse(body, content_type=SSE_CONTENT_TYPE, headers=SSE_HEADERS)


class RunCancelledSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=["cancelling", "cancelled"])


class RunCancelView(_RunViewMixin, APIView):
    """Stop the run: a working run ends with a ``done`` that says ``"cancelled": true`` (202), a run
    waiting for an approval is cancelled at once (200); a run that is not active answers 409."""

    action = "cancel"
    api_key_scopes = {"cancel": CHAT_SCOPE}

    @extend_schema(request=None, responses={200: RunCancelledSerializer, 202: RunCancelledSerializer})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        run = self.run_of_caller()
        sender = Sender(organization_id=self.org.pk, user=request.user, via="http")
        recorded = command_record(Cancel(sender, run.conversation, run.pk))
        match recorded.result:
            case NothingToCancel() | Refused() as refused:
                raise Conflict(refused.message, code=refused.code)
            case Cancelled(run_id=run_id):
                return JsonResponse({"run_id": str(run_id), "status": "cancelled"})
            case CancelRequested(run_id=run_id):
                pass

        async def then() -> JsonResponse:
            await command_deliver(recorded)
            return JsonResponse({"run_id": str(run_id), "status": "cancelling"}, status=202)

        return ContinueOnLoop(then)
