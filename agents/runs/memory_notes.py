"""Memories noted after a run's answer (an agent's "note memories after each answer", off by default).

Once a run of an agent with memory and this switch on has answered, a worker asks the agent's model once
which lasting facts or preferences of the person the exchange holds (:func:`memory_notes_take`), told the
memories the person already has so that it does not repeat them. Its answer is decoded strictly (a JSON
object ``{"memories": [...]}``, at most :data:`MAX_NOTES` short texts) and each new one kept as a memory
noted after a conversation. The call is the person's: the budgets that count them and their agent admit
it and count its tokens, and a usage row of purpose "memory" records it. Nothing is sent when the agent
has no model endpoint of the organisation's (the environment's or the offline demo model's cannot be
accounted to a budget) or when a budget is spent.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

from asgiref.sync import async_to_sync

from agents import runtime
from agents.engine.completion import ChatResponse
from agents.engine.strict_json import StrictJSONError, loads_strict
from agents.engine.tokens import estimate_text_tokens
from agents.knowledge.usage import BudgetReached, Counted, EmbeddingPayer, call_metered
from agents.memory.limits import TEXT_MAX_CHARS
from agents.memory.models import MemoryOrigin
from agents.memory.recall import memory_recall
from agents.memory.services import MemorySaved, memory_create
from agents.models import Agent, Message, MessageRole, ModelConfig, Run, RunStatus
from agents.usage.models import CallPurpose

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_NOTES",
    "NotesFailed",
    "NotesSkipped",
    "NotesTaken",
    "memory_notes_take",
    "memory_notes_wanted",
]

MAX_NOTES = 3
ANSWER_TOKENS = 300  # what the notes' answer may take, in the budgets' estimate
NOTES_SYSTEM = (
    "You keep a person's long-term memory for an assistant. From the exchange below, list the lasting "
    "facts and preferences about the person that will matter in later conversations: their role, team, "
    "place, the way they like answers. Leave out what is only true for this task, secrets such as "
    "passwords, facts about other people or the world, and whatever the known memories already say. "
    f'Answer with a JSON object {{"memories": [...]}}: at most {MAX_NOTES} strings, each one short '
    "sentence about the person, in the person's language; an empty list when there is nothing to keep."
)


@dataclass(frozen=True, slots=True)
class NotesTaken:
    """The model answered: ``kept`` are the new memories (texts it gave that the person already had are
    not among them)."""

    kept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NotesSkipped:
    """Nothing was asked: the switch is off, the run did not answer, no endpoint to account, a budget."""

    reason: str


@dataclass(frozen=True, slots=True)
class NotesFailed:
    """The model was asked and its answer was not what was asked for (or the call failed)."""

    reason: str


NotesOutcome = NotesTaken | NotesSkipped | NotesFailed


def memory_notes_wanted(run_id: uuid.UUID) -> bool:
    """Whether the run's agent notes memories after its answers (sync: one query)."""
    return (
        Run.objects.unscoped()
        .filter(pk=run_id, conversation__agent__memory=True, conversation__agent__memory_extraction=True)
        .exists()
    )


def memory_notes_take(run_id: uuid.UUID) -> NotesOutcome:
    """Ask the run's agent's model for the person's memories the run's exchange holds and keep them (sync,
    for a worker: the model call is awaited on an event loop of its own)."""
    run = Run.objects.unscoped().select_related("conversation__agent").filter(pk=run_id).first()
    if run is None or not memory_notes_wanted(run_id):
        return NotesSkipped("memory notes are off for this agent")
    if run.status != RunStatus.DONE or not run.answer.strip():
        return NotesSkipped("the run did not answer")
    agent = run.conversation.agent
    config = _endpoint_config(agent)
    if config is None:
        return NotesSkipped("the agent has no model endpoint of the organisation's")
    question = (
        Message.objects.filter(run=run, role=MessageRole.USER, injected=False)
        .order_by("id")
        .values_list("content", flat=True)
        .first()
    ) or ""
    known = memory_recall(
        organization_id=run.organization_id, user_id=run.user_id, query=question, mark=False
    )
    messages = _messages(question, run.answer, [memory.text for memory in known.memories])
    llm = runtime.llm_for(runtime.endpoint_of(config))
    payer = EmbeddingPayer(
        organization_id=run.organization_id, user_id=run.user_id, agent_id=agent.pk, run_id=run.pk
    )

    async def ask() -> ChatResponse:
        json_mode = {"type": "json_object"} if config.json_mode else None
        return await llm.chat(messages, response_format=json_mode, temperature=0)

    try:
        answer = async_to_sync(call_metered)(
            payer,
            config,
            purpose=CallPurpose.MEMORY,
            estimate=sum(estimate_text_tokens(m["content"]) for m in messages) + ANSWER_TOKENS,
            call=ask,
            counted=lambda reply: Counted(
                reply.usage.total_tokens, reply.model or "", completion_tokens=reply.usage.completion_tokens
            ),
        )
    except Exception as exc:  # the endpoint failed: nothing is kept, the run is unaffected
        return NotesFailed(f"the model call failed: {type(exc).__name__}")
    if isinstance(answer, BudgetReached):
        return NotesSkipped(f"the budget {answer.budget!r} is spent")
    texts = _decoded(answer.content or "")
    if texts is None:
        return NotesFailed('the model did not answer with {"memories": [...]}')
    kept = []
    for text in texts:
        saved = memory_create(
            organization_id=run.organization_id,
            user_id=run.user_id,
            text=text,
            origin=MemoryOrigin.EXTRACTED,
            agent_id=agent.pk,
            conversation_id=run.conversation_id,
        )
        if isinstance(saved, MemorySaved) and saved.created:
            kept.append(text)
    return NotesTaken(tuple(kept))


def _endpoint_config(agent: Agent) -> ModelConfig | None:
    config = agent.model_config if agent.model_config is not None and agent.model_config.active else None
    return config or runtime.default_model_of(agent.organization_id)


def _messages(question: str, answer: str, known: list[str]) -> list[dict[str, str]]:
    listed = "\n".join(f"- {text}" for text in known) or "(none)"
    exchange = (
        f"Known memories of the person:\n{listed}\n\n"
        f"The person asked:\n{question.strip()}\n\n"
        f"The assistant answered:\n{answer.strip()}"
    )
    return [{"role": "system", "content": NOTES_SYSTEM}, {"role": "user", "content": exchange}]


def _decoded(content: str) -> list[str] | None:
    """The memories of a strict ``{"memories": [str, ...]}`` answer (at most :data:`MAX_NOTES`, each
    short enough), or ``None`` for any other answer."""
    try:
        found = loads_strict(content.strip())
    except (StrictJSONError, json.JSONDecodeError, ValueError):
        return None
    if not isinstance(found, dict) or set(found) != {"memories"} or not isinstance(found["memories"], list):
        return None
    texts = found["memories"]
    if len(texts) > MAX_NOTES or not all(
        isinstance(t, str) and 0 < len(t.strip()) <= TEXT_MAX_CHARS for t in texts
    ):
        return None
    return [t.strip() for t in texts]
