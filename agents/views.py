"""Pages of the chat web app: the conversation list with the agent picker, the chat view, the download of
a knowledge-base document that an answer cites, and of a file attached in the chat.

Views stay thin: the organisation comes from the URL slug (a non-member gets the same 404 as for a
missing organisation), reads go through ``agents.selectors`` and writes through ``agents.services``.
Everything live (history, events, sending) happens in ``static/js/chat*.js`` over the REST API and
the conversation websocket.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseForbidden
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from agents import selectors, services
from agents.attachments.download import attachment_file_response
from agents.attachments.limits import attachment_limits
from agents.attachments.selectors import attachment_visible_to
from agents.attachments.services import attachment_download_record
from agents.knowledge.download import document_file_response
from agents.knowledge.selectors import document_readable
from agents.runtime import endpoint_for_agent
from platform_core.identity.api_keys.authentication import (
    api_token_authenticate,
    bearer_token_from_header,
    throttled_message,
)
from platform_core.identity.api_keys.scopes import Scope
from platform_core.identity.api_keys.throttle import KeyThrottled
from platform_core.models import Membership, Organization, Role
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.stored_files import StoredFileMissing, StoredFileUnreachable, storage_unavailable_message
from platform_core.tenancy.scoping import member_org_from_slug

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agents.models import Agent, Conversation

SIDEBAR_CONVERSATIONS = 50

View = Callable[..., HttpResponseBase]


def _bearer_user(view: View) -> View:
    """Let API clients that send ``Authorization: Bearer`` see the same pages (and 404s) as a session.

    The pages only show conversations and cited documents, so a key needs the ``read`` scope, as the
    REST API's reads do.
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        raw = bearer_token_from_header(request.headers.get("Authorization"))
        if raw is not None and not request.user.is_authenticated:
            token = api_token_authenticate(raw, ip_address=client_ip(request))
            if isinstance(token, KeyThrottled):
                refused = HttpResponse(throttled_message(token), status=429, content_type="text/plain")
                refused["Retry-After"] = str(token.retry_after)
                return refused
            if token is not None:
                if not token.allows(Scope.READ):
                    return HttpResponseForbidden(
                        _("This API key lacks the %(scope)s scope.") % {"scope": Scope.READ}
                    )
                request.user = token.user
        return view(request, *args, **kwargs)

    return wrapper


def _conversations(user: User, org: Organization) -> list[Conversation]:
    return list(
        selectors.conversation_list_for_user(user=user, organization_id=org.pk)[:SIDEBAR_CONVERSATIONS]
    )


@_bearer_user
@login_required
@require_GET
def chat_home(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The user's conversations in the organisation, newest first, and the agent picker."""
    user = signed_in_user(request)
    org, _membership = member_org_from_slug(user=user, slug=org_slug)
    return render(
        request,
        "agents/chat_home.html",
        {
            "org": org,
            "conversations": _conversations(user, org),
            "agents": list(selectors.agents_available(organization_id=org.pk)),
            **_chat_page_urls(org),
        },
    )


@_bearer_user
@login_required
@require_GET
def chat_new(request: HttpRequest, org_slug: str) -> HttpResponse:
    """A new, empty chat with the chosen agent (``?agent=<id>``). Nothing is stored until the first
    message: the page then creates the conversation over the REST API and opens its socket."""
    user = signed_in_user(request)
    org, membership = member_org_from_slug(user=user, slug=org_slug)
    try:
        agent_id = uuid.UUID(str(request.GET.get("agent", "")))
    except ValueError as exc:
        raise Http404("No such agent.") from exc
    agent = selectors.agents_available(organization_id=org.pk).filter(pk=agent_id).first()
    if agent is None:
        raise Http404("No such agent.")
    return render(
        request,
        "agents/chat.html",
        {
            "org": org,
            "agent": agent,
            "conversation": None,
            "conversations": _conversations(user, org),
            "create_url": f"/api/v1/orgs/{org.slug}/conversations/",
            "endpoint_check_url": _endpoint_check_url(request, membership, agent),
            "login_url": f"{reverse('login')}?{urlencode({'next': request.get_full_path()})}",
            **_chat_page_urls(org),
            **_attachment_context(org, agent),
        },
    )


def _endpoint_check_url(request: HttpRequest, membership: Membership | None, agent: Agent) -> str:
    """For the organisation's admins, where the agent's model endpoint is checked (the chat links it when a
    run ends because of the model); ``""`` for everyone else."""
    admin = membership is not None and membership.role in (Role.OWNER, Role.ADMIN) and request.user.is_staff
    if not admin:
        return ""
    if agent.model_config_id is None:  # the organisation's default endpoint: the list shows which it is
        return reverse("admin:agents_modelconfig_changelist")
    return reverse("admin:agents_modelconfig_change", args=[agent.model_config_id]) + "#endpoint-check"


def _chat_page_urls(org: Organization) -> dict[str, Any]:
    """What every chat page's script needs besides its conversation."""
    return {
        "chat_home_url": reverse("chat-home", kwargs={"org_slug": org.slug}),
        "conversations_url": f"/api/v1/orgs/{org.slug}/conversations/",
        "max_message_chars": services.max_message_chars(),
    }


def _attachment_context(org: Organization, agent: Agent) -> dict[str, Any]:
    """What the composer needs to attach files: where they upload, the limits it shows, and whether the
    agent's model reads images (the endpoint a run of the agent would use: its own, else the
    organisation's default), so a picture it cannot read is refused before it is sent."""
    limits = attachment_limits()
    placeholder = uuid.UUID(int=0)
    return {
        "attachments_url": f"/api/v1/orgs/{org.slug}/attachments/",
        # The download link of an attachment, its id in place of the zeros.
        "attachment_file_url": reverse(
            "attachment-file", kwargs={"org_slug": org.slug, "attachment_id": placeholder}
        ),
        "attachment_max_file_bytes": limits.max_file_bytes,
        "attachment_max_message_bytes": limits.max_message_bytes,
        "agent_reads_images": endpoint_for_agent(agent).vision,
    }


@_bearer_user
@login_required
@require_GET
def chat_conversation(request: HttpRequest, org_slug: str, conversation_id: uuid.UUID) -> HttpResponse:
    """The chat view of one of the user's conversations in this organisation."""
    user = signed_in_user(request)
    org, membership = member_org_from_slug(user=user, slug=org_slug)
    conversation = selectors.conversation_for_user(user=user, conversation_id=conversation_id)
    if conversation is None or conversation.organization_id != org.pk:
        raise Http404("No such conversation.")
    return render(
        request,
        "agents/chat.html",
        {
            "org": org,
            "agent": conversation.agent,
            "conversation": conversation,
            "conversations": _conversations(user, org),
            "active_run": selectors.active_run_for_conversation(conversation=conversation),
            "messages_url": f"/api/v1/orgs/{org.slug}/conversations/{conversation.pk}/messages/",
            "socket_path": f"/ws/conversations/{conversation.pk}/",
            "endpoint_check_url": _endpoint_check_url(request, membership, conversation.agent),
            "login_url": f"{reverse('login')}?{urlencode({'next': request.path})}",
            **_chat_page_urls(org),
            **_attachment_context(org, conversation.agent),
        },
    )


@_bearer_user
@login_required
@require_GET
def knowledge_document_file(request: HttpRequest, org_slug: str, document_id: uuid.UUID) -> HttpResponseBase:
    """A knowledge-base document's file, the target of the chat's citation links: only for a user who may
    read its knowledge base; everyone else gets the 404 of a missing document."""
    user = signed_in_user(request)
    org, _membership = member_org_from_slug(user=user, slug=org_slug)
    document = document_readable(organization_id=org.pk, user_id=user.pk, document_id=document_id)
    response = document_file_response(document) if document is not None else StoredFileMissing()
    if isinstance(response, StoredFileMissing):
        raise Http404("No such document.")
    if isinstance(response, StoredFileUnreachable):
        return _storage_unavailable()
    return response


@_bearer_user
@login_required
@require_GET
def attachment_file(request: HttpRequest, org_slug: str, attachment_id: uuid.UUID) -> HttpResponseBase:
    """A file attached in the chat, the target of the conversation's download links: only for its uploader
    while it is pending and its conversation's owner once sent, members both; everyone else gets the 404 of
    a missing file. Each download is audited."""
    user = signed_in_user(request)
    org, _membership = member_org_from_slug(user=user, slug=org_slug)
    attachment = attachment_visible_to(organization_id=org.pk, user=user, attachment_id=attachment_id)
    response = attachment_file_response(attachment) if attachment is not None else StoredFileMissing()
    if attachment is None or isinstance(response, StoredFileMissing):
        raise Http404("No such file.")
    if isinstance(response, StoredFileUnreachable):
        return _storage_unavailable()
    attachment_download_record(attachment=attachment, actor=user, ip_address=client_ip(request))
    return response


def _storage_unavailable() -> HttpResponse:
    """503: the file storage did not give the file (the user may try again)."""
    return HttpResponse(
        storage_unavailable_message(),
        status=503,
        content_type="text/plain; charset=utf-8",
        headers={"Retry-After": "30", "Cache-Control": "no-store"},
    )
