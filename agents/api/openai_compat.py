"""The OpenAI-compatible endpoint: ``POST /api/v1/orgs/<slug>/agents/<id>/chat/completions``,
``POST /v1/chat/completions`` (the agent as ``model``) and ``GET /v1/models``, so the official ``openai``
SDK and clients built on it can chat with an agent. Errors come as OpenAI's error object. The mapping onto
runs is in :mod:`agents.chat_http.completions`, the wire shapes in :mod:`agents.chat_http.openai_shapes`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.http import JsonResponse, StreamingHttpResponse
from django.utils import translation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.api.async_drf import ContinueOnLoop
from agents.api.chat_scope import CHAT_SCOPE, HasChatOrReadScope, HasChatScope, key_organization_id
from agents.api.stream_negotiation import EventStreamNegotiation
from agents.chat_http.completions import (
    CompletionStarted,
    agent_for_model,
    agent_for_route,
    completion_collect,
    completion_start,
    completion_stream,
    models_for_user,
)
from agents.chat_http.openai_shapes import CompletionRefused, completion_request_parse, error_object
from agents.chat_http.sse import SSE_CONTENT_TYPE, SSE_HEADERS
from agents.conversations.handling import command_deliver
from agents.models import Agent
from agents.runs.language import interface_language_of_request
from platform_core.api_errors import api_exception_handler
from platform_core.identity.api_keys.scopes import request_credential
from platform_core.identity.api_keys.watch import KeyLapsed, KeyWatch
from platform_core.tenancy.scoping import IsOrgMember, OrgScopedViewMixin


def openai_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The project's handler, its answer reshaped as OpenAI's ``{"error": {...}}``."""
    response = api_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    detail = data.get("detail") if isinstance(data, dict) else None
    message = str(detail) if detail is not None else str(data)
    code = getattr(detail, "code", None) or getattr(exc, "default_code", None)
    response.data = error_object(message, status=response.status_code, code=code)
    return response


class _Message(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "developer", "user", "assistant"])
    content = serializers.CharField(help_text="Text, or a list of text parts")


class _StreamOptions(serializers.Serializer):
    include_usage = serializers.BooleanField(required=False)


class ChatCompletionRequestSerializer(serializers.Serializer):
    """Documentation of the request (the view parses it itself, to answer in OpenAI's error format)."""

    model = serializers.CharField(
        help_text='The agent: "<org-slug>/<agent name or id>" (or the name or id alone with a key of one '
        "organisation). Ignored on the organisation's agent route."
    )
    messages = _Message(
        many=True,
        help_text="The last is the question; earlier user/assistant messages "
        "seed a new conversation's history; system messages are ignored.",
    )
    stream = serializers.BooleanField(required=False, default=False)
    stream_options = _StreamOptions(required=False)
    conversation_id = serializers.UUIDField(
        required=False, help_text="Extension: continue this conversation of yours instead of starting one."
    )


_COMPLETION_RESPONSES = {
    (200, "application/json"): OpenApiResponse(
        OpenApiTypes.OBJECT,
        description="A chat.completion; the extensions x_agent (run, conversation, status), x_agent_steps "
        "(tool calls, results, approvals as the websocket's frames) and x_citations (the sources the "
        "answer's [n] marks cite).",
    ),
    (200, "text/event-stream"): OpenApiResponse(
        OpenApiTypes.STR,
        description="With stream=true: chat.completion.chunk events, the steps in x_agent_steps, x_agent and "
        "x_citations on the last chunk, then data: [DONE].",
    ),
}


class _OpenAIView(APIView):
    permission_classes = [permissions.IsAuthenticated, HasChatScope]
    content_negotiation_class = EventStreamNegotiation  # streaming clients may accept text/event-stream

    def get_exception_handler(self) -> Any:
        return openai_exception_handler

    def serve(self, request: Request, agent: Agent | CompletionRefused, parsed: Any) -> Any:
        if isinstance(agent, CompletionRefused):
            return _refused(agent)
        started = completion_start(
            user=request.user, agent=agent, request=parsed, language=interface_language_of_request(request)
        )
        if isinstance(started, CompletionRefused):
            return _refused(started)
        model = parsed.model or agent.name
        language = translation.get_language()  # the request's (LocaleMiddleware's), for the notes
        watch = KeyWatch.of(request_credential(request))

        async def then() -> Any:
            return await _respond(
                started,
                model=model,
                stream=parsed.stream,
                usage=parsed.include_usage,
                language=language,
                watch=watch,
            )

        return ContinueOnLoop(then)


async def _respond(
    started: CompletionStarted,
    *,
    model: str,
    stream: bool,
    usage: bool,
    language: str | None,
    watch: KeyWatch | None,
) -> Any:
    # The run is handed over first, whatever happens to the request from here on.
    await asyncio.shield(command_deliver(started.recorded))
    if stream:
        return StreamingHttpResponse(
            completion_stream(started, model=model, include_usage=usage, language=language, watch=watch),
            content_type=SSE_CONTENT_TYPE,
            headers=SSE_HEADERS,
        )
    collected = await completion_collect(started, model=model, language=language, watch=watch)
    if isinstance(collected, KeyLapsed):
        with translation.override(language):
            body = error_object(collected.message, status=401, code=collected.code)
        return JsonResponse(body, status=401, headers={"WWW-Authenticate": "Bearer"})
    return JsonResponse(collected, json_dumps_params={"ensure_ascii": False})


def _refused(refused: CompletionRefused) -> Response:
    return Response(
        error_object(refused.message, status=refused.status, code=refused.code, param=refused.param),
        status=refused.status,
    )


class ChatCompletionsView(_OpenAIView):
    """``POST /v1/chat/completions``: chat with the agent named by ``model``, as OpenAI's API does."""

    @extend_schema(request=ChatCompletionRequestSerializer, responses=_COMPLETION_RESPONSES, tags=["openai"])
    def post(self, request: Request) -> Any:
        parsed = completion_request_parse(request.data)
        if isinstance(parsed, CompletionRefused):
            return _refused(parsed)
        agent = agent_for_model(
            user=request.user, model=parsed.model, key_org_id=key_organization_id(request)
        )
        return self.serve(request, agent, parsed)


class OrgAgentChatCompletionsView(OrgScopedViewMixin, _OpenAIView):
    """``POST /api/v1/orgs/<slug>/agents/<id>/chat/completions``: chat with this agent (``model`` is
    echoed, not used). Point an OpenAI client's ``base_url`` at ``…/agents/<id>``."""

    permission_classes = [permissions.IsAuthenticated, IsOrgMember, HasChatScope]
    action = "chat_completions"  # for the org routes' API key scope check
    api_key_scopes = {"chat_completions": CHAT_SCOPE}

    @extend_schema(request=ChatCompletionRequestSerializer, responses=_COMPLETION_RESPONSES, tags=["openai"])
    def post(self, request: Request, org_slug: str, agent_id: Any) -> Any:
        parsed = completion_request_parse(request.data, model_required=False)
        if isinstance(parsed, CompletionRefused):
            return _refused(parsed)
        return self.serve(request, agent_for_route(organization=self.org, agent_id=agent_id), parsed)


class ModelListView(_OpenAIView):
    """``GET /v1/models``: the agents the caller may chat with, ids as ``"<org-slug>/<agent name>"``."""

    permission_classes = [permissions.IsAuthenticated, HasChatOrReadScope]

    @extend_schema(
        responses=OpenApiResponse(
            OpenApiTypes.OBJECT, description='{"object": "list", "data": [model, ...]}'
        ),
        tags=["openai"],
    )
    def get(self, request: Request) -> Response:
        data = models_for_user(user=request.user, key_org_id=key_organization_id(request))
        return Response({"object": "list", "data": data})
