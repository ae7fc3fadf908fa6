"""OpenAI-compatible chat completions served by an agent's run.

Which agent: the URL's (``/api/v1/orgs/<slug>/agents/<id>/chat/completions``) or the ``model`` of
``/v1/chat/completions``: ``"<org-slug>/<agent>"``, or ``"<agent>"`` alone with a key bound to one
organisation or a user of one organisation; ``<agent>`` is the agent's id or its name (any case). Only
active agents of organisations the user is a member of; anything else is "no such model" (404).

Which conversation: a new one of the key's user per call, its history seeded with the request's earlier
user and assistant messages, unless the ``conversation_id`` extension names one of the user's
conversations with this agent, which then continues (its stored history is used; earlier messages
of the request are ignored). The question becomes a run exactly like a chat message (guard rails,
approvals, call log); the client's disconnecting does not stop the run.

Waiting: a tool call waiting for a person shows up at once (an ``approval`` step, and in a stream a content
note naming the approvers). The response waits ``OPENAI_COMPAT_APPROVAL_WAIT_SECONDS`` (default 60) for
the decision, then ends with ``x_agent.status = "waiting_for_approval"`` (and the note as content when no
answer came); a run still working after ``OPENAI_COMPAT_MAX_WAIT_SECONDS`` (default 600) ends it with
``"in_progress"``. The run goes on; its answer lands in the conversation (and in the run's SSE stream).

A response of an API key ends once the key is revoked or expires: a waiting completion with a 401, a
stream with OpenAI's error object (the run goes on without it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from agents import services
from agents.attachments.inline import InlineFile, InlineRefused, inline_files_discard, inline_files_store
from agents.chat_http.follow import Heartbeat, heartbeat_seconds, run_frames
from agents.chat_http.openai_shapes import (
    CompletionRefused,
    CompletionRequest,
    FileReference,
    RunFold,
    SentFile,
    chunk_object,
    completion_object,
    error_object,
    usage_chunk,
    waiting_note,
)
from agents.chat_http.sse import sse_comment, sse_data
from agents.conversations.commands import FollowUpQueued, PostMessage, PostResult, Refused, RunStarted, Sender
from agents.conversations.handling import Recorded, command_record
from agents.models import Agent, Conversation, Message, MessageRole
from agents.runs.events.store import last_seq_sync
from agents.runtime import agent_reads_images
from platform_core.identity.api_keys.watch import KeyLapsed, KeyWatch, until_key_lapses
from platform_core.models import Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Longer than any "<org-slug>/<agent name>" (64 + 1 + 100 characters); a longer ``model`` names no agent
# and never reaches the case-insensitive lookup (SQLite refuses a pattern of a megabyte: a 500).
MAX_MODEL_CHARS = 200


def approval_wait_seconds() -> float:
    return float(getattr(settings, "OPENAI_COMPAT_APPROVAL_WAIT_SECONDS", 60))


def max_wait_seconds() -> float:
    return float(getattr(settings, "OPENAI_COMPAT_MAX_WAIT_SECONDS", 600))


def _member_org_ids(user: User, key_org_id: int | None) -> list[int]:
    ids = list(Membership.objects.filter(user_id=user.pk).values_list("organization_id", flat=True))
    return [i for i in ids if key_org_id is None or i == key_org_id]


def _agent_in(org_ids: list[int], name: str) -> list[Agent]:
    agents = Agent.objects.select_related("organization").filter(organization_id__in=org_ids, active=True)
    try:
        by_id = agents.filter(pk=uuid.UUID(name))
    except ValueError:
        by_id = Agent.objects.none()
    found = list(by_id) or list(agents.filter(name__iexact=name))
    return found


def agent_for_model(*, user: User, model: str, key_org_id: int | None) -> Agent | CompletionRefused:
    """The agent a ``model`` names among those the user may chat with (sync); a ``model`` longer than
    :data:`MAX_MODEL_CHARS` is refused before any lookup."""
    if len(model) > MAX_MODEL_CHARS:
        return CompletionRefused(
            _("The model names an agent in at most %(max)d characters.") % {"max": MAX_MODEL_CHARS},
            param="model",
            code="model_too_long",
        )
    org_ids = _member_org_ids(user, key_org_id)
    slug, slash, name = model.partition("/")
    found: list[Agent] = []
    if slash:
        org = Organization.objects.filter(slug=slug, pk__in=org_ids).first()
        if org is not None:
            found = _agent_in([org.pk], name.strip())
    if not found:  # no organisation prefix (or the agent's name itself has a slash)
        found = _agent_in(org_ids, model)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        return CompletionRefused(
            _('Several organisations have an agent of this name; use "<organisation>/<agent>" as the model.'),
            param="model",
            code="model_ambiguous",
        )
    return CompletionRefused(
        _("No such model: name an agent you may use (see GET /v1/models)."),
        param="model",
        code="model_not_found",
        status=404,
    )


def agent_for_route(*, organization: Organization, agent_id: uuid.UUID) -> Agent | CompletionRefused:
    """The URL's agent, active, in the URL's organisation (sync)."""
    agent = (
        Agent.objects.select_related("organization")
        .filter(organization=organization, pk=agent_id, active=True)
        .first()
    )
    if agent is None:
        return CompletionRefused(_("No such agent."), code="model_not_found", status=404)
    return agent


def models_for_user(*, user: User, key_org_id: int | None) -> list[dict[str, Any]]:
    """``GET /v1/models``: the agents the caller may chat with, as OpenAI's model objects (sync)."""
    agents = (
        Agent.objects.select_related("organization")
        .filter(organization_id__in=_member_org_ids(user, key_org_id), active=True)
        .order_by("organization__slug", "name")
    )
    return [
        {
            "id": f"{agent.organization.slug}/{agent.name}",
            "object": "model",
            "created": int(agent.created_at.timestamp()),
            "owned_by": agent.organization.slug,
            "x_agent": {"agent_id": str(agent.pk), "name": agent.name, "description": agent.description},
        }
        for agent in agents
    ]


@dataclass(frozen=True, slots=True)
class CompletionStarted:
    """The question is a run (or a follow-up of the conversation's active run): ``posted``, which
    :func:`~agents.conversations.handling.command_deliver` of ``recorded`` hands to the run manager."""

    agent: Agent
    conversation: Conversation
    posted: RunStarted | FollowUpQueued
    recorded: Recorded[PostResult]
    after_seq: int = 0
    type: Literal["started"] = "started"


def completion_start(
    *, user: User, agent: Agent, request: CompletionRequest, language: str = ""
) -> CompletionStarted | CompletionRefused:
    """Store the question (with its files) in a new or continued conversation of ``user`` and record its
    run (sync); ``language``: the request's interface language (the run's stop messages). A refused
    question leaves nothing of its files behind."""
    conversation: Conversation | None = None
    if request.conversation_id is not None:
        conversation = (
            Conversation.objects.select_related("agent")
            .filter(pk=request.conversation_id, user=user, agent=agent, organization_id=agent.organization_id)
            .first()
        )
        if conversation is None:
            return CompletionRefused(
                _("No such conversation with this agent."),
                param="conversation_id",
                code="conversation_not_found",
                status=404,
            )
    sent = [file for file in request.files if isinstance(file, SentFile)]
    images = [file for file in sent if file.media_type.startswith("image/")]
    if images and not agent_reads_images(agent):
        return CompletionRefused(
            _("This agent's model cannot read images (the vision ability): send text or documents only."),
            param=images[0].where,
            code="model_cannot_read_images",
        )
    stored = inline_files_store(
        organization=agent.organization,
        user=user,
        files=[InlineFile(file.name, file.data, file.where) for file in sent],
    )
    if isinstance(stored, InlineRefused):
        return CompletionRefused(stored.message, param=stored.where, code=stored.code)
    attachment_ids = (
        *(file.attachment_id for file in request.files if isinstance(file, FileReference)),
        *(str(pk) for pk in stored.attachment_ids),
    )

    def discard() -> None:
        inline_files_discard(
            organization_id=agent.organization_id, user=user, attachment_ids=stored.attachment_ids
        )

    try:
        if conversation is None:
            conversation = _conversation_seeded(user=user, agent=agent, prior=request.prior)
        # A follow-up's completion starts after what the conversation already shows; a new run's at its
        # first event (every event of the run comes after this seq).
        after_seq = last_seq_sync(conversation.pk)
    except services.RunRefused as refused:
        discard()
        return _refused(refused.code, refused.message)
    sender = Sender(organization_id=agent.organization_id, user=user, via="openai", language=language)
    recorded = command_record(
        PostMessage(sender, conversation, request.question, attachment_ids=attachment_ids)
    )
    if isinstance(recorded.result, Refused):
        discard()
        return _refused(recorded.result.code, recorded.result.message)
    return CompletionStarted(
        agent=agent, conversation=conversation, posted=recorded.result, recorded=recorded, after_seq=after_seq
    )


def _refused(code: str, message: str) -> CompletionRefused:
    return CompletionRefused(message, code=code, status=429 if code == "too_many_runs" else 400)


@transaction.atomic
def _conversation_seeded(*, user: User, agent: Agent, prior: tuple[tuple[str, str], ...]) -> Conversation:
    conversation = services.conversation_create(organization=agent.organization, user=user, agent=agent)
    limit = services.max_message_chars()
    Message.objects.bulk_create(
        Message(conversation=conversation, role=MessageRole(role), content=text[:limit])
        for role, text in prior
        if text.strip()
    )
    return conversation


class _Clock:
    """The response's deadlines: the whole wait, and the wait for a pending approval's decision."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.approval_since: float | None = None

    def see(self, fold: RunFold) -> None:
        if fold.approval is None:
            self.approval_since = None
        elif self.approval_since is None:
            self.approval_since = time.monotonic()

    def expired(self) -> bool:
        now = time.monotonic()
        if now - self.started >= max_wait_seconds():
            return True
        return self.approval_since is not None and now - self.approval_since >= approval_wait_seconds()


def _beat() -> float:
    """How often the response wakes up without events (its deadlines are checked then)."""
    return max(0.1, min(heartbeat_seconds(), approval_wait_seconds() / 10, max_wait_seconds() / 10))


def _fold_for(started: CompletionStarted) -> RunFold:
    return RunFold(
        run_id=started.posted.run_id, conversation_id=started.conversation.pk, agent_id=started.agent.pk
    )


def _followed(started: CompletionStarted, watch: KeyWatch | None) -> AsyncGenerator[Any, None]:
    """The run's frames and heartbeats, until the key ``watch`` names lapses (then a :class:`KeyLapsed`)."""
    frames = run_frames(
        conversation_id=started.conversation.pk,
        run_id=started.posted.run_id,
        after_seq=started.after_seq,
        heartbeat=_beat(),
    )
    return until_key_lapses(frames, watch)


async def completion_collect(
    started: CompletionStarted, *, model: str, language: str | None = None, watch: KeyWatch | None = None
) -> dict[str, Any] | KeyLapsed:
    """Wait for the delivered run's end (or a deadline) and give its ``chat.completion``; or the key's
    lapse, should it be revoked or expire meanwhile."""
    fold, clock = _fold_for(started), _Clock()
    items = _followed(started, watch)
    try:
        async for item in items:
            if isinstance(item, KeyLapsed):
                return item
            if not isinstance(item, Heartbeat):
                fold.take(item)
                clock.see(fold)
            if fold.done is not None or clock.expired():
                break
    finally:
        await items.aclose()
    with translation.override(language):  # the notes speak the request's language
        return completion_object(fold, model=model)


async def completion_stream(
    started: CompletionStarted,
    *,
    model: str,
    include_usage: bool = False,
    language: str | None = None,
    watch: KeyWatch | None = None,
) -> AsyncIterator[bytes]:
    """Stream the delivered run as ``chat.completion.chunk`` events, ending with ``data: [DONE]``; or, once
    the key is revoked or expires, with OpenAI's error object (``api_key_revoked``, ``api_key_expired``),
    which the SDK raises."""
    fold, clock = _fold_for(started), _Clock()
    created = int(time.time())
    yield sse_data(
        chunk_object(fold, model=model, created=created, delta={"role": "assistant", "content": ""})
    )
    items = _followed(started, watch)
    try:
        async for item in items:
            if isinstance(item, KeyLapsed):
                with translation.override(language):
                    yield sse_data(error_object(item.message, status=401, code=item.code))
                return
            if isinstance(item, Heartbeat):
                yield sse_comment("heartbeat")
            else:
                waiting_before = fold.approval is not None
                text = fold.take(item)
                clock.see(fold)
                steps = [item] if fold.steps and fold.steps[-1] is item else None
                delta: dict[str, Any] = {}
                if fold.approval is not None and not waiting_before:
                    with translation.override(language):
                        text = f"{waiting_note(fold.approval)}\n\n{text}"
                if text:
                    delta["content"] = text
                if delta or steps:
                    yield sse_data(chunk_object(fold, model=model, created=created, delta=delta, steps=steps))
            if fold.done is not None or clock.expired():
                break
    finally:
        await items.aclose()
    if not fold.streamed and fold.status in ("failed", "in_progress"):  # say why no answer came
        with translation.override(language):
            note = fold.content
        yield sse_data(chunk_object(fold, model=model, created=created, delta={"content": note}))
    yield sse_data(chunk_object(fold, model=model, created=created, finish_reason="stop", final=True))
    if include_usage:
        yield sse_data(usage_chunk(fold, model=model, created=created))
    yield sse_data("[DONE]")
