"""ContextGuard: keeps a conversation under the model's token budget by summarising its older turns.

The engine calls :meth:`ContextGuard.check_and_compact` before every LLM call. Under budget it returns the
history unchanged (the estimate is a running total, so this costs next to nothing). Over budget it replaces
the older part of the history with one LLM-written summary message and returns::

    system message(s), summary message, pinned messages of the summarised part, kept tail

Rules:

* **User turn.** A message with role ``"user"`` that the user wrote as a new request: not a pinned
  follow-up (``"_pinned"``), not a previous summary (``"_summary"``) and not engine bookkeeping sent as a
  user message (``"_bookkeeping"``: JSON-mode observations, cycle warnings, reflection and checklist
  prompts). The last ``keep_user_turns`` (3) user turns are kept.
* **Cuts only before user messages.** An assistant message with ``tool_calls`` and its tool results are
  always contiguous and never followed directly by a user message inside the group, so such a cut can never
  separate them. When the last turns alone do not fit, the cut moves to a later user message (bookkeeping
  messages included, which is what lets one long tool-using run be compacted); the opening message of the
  latest user turn is then carried over verbatim so the current request is never lost.
* **Pinned messages survive** verbatim and in their original order, together with the tool exchange they
  belong to, if any. System messages of the summarised part move to the front.
* **Never worse than before.** Nothing summarisable, a summary that would not bring the history under the
  limit, or any failure of the summarising call leaves the history unchanged (and is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agents.engine.context_summary import (
    BOOKKEEPING_KEY,
    PINNED_KEY,
    SUMMARY_KEY,
    SUMMARY_PREFIX,
    clip_to_tokens,
    is_summary_message,
    is_user_turn,
    summary_request,
)
from agents.engine.llm import LLM, Message, Usage
from agents.engine.metering import CallPurpose, call_purpose
from agents.engine.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_message_tokens,
    estimate_text_tokens,
    estimate_tokens,
)

__all__ = [
    "BOOKKEEPING_KEY",
    "PINNED_KEY",
    "SUMMARY_KEY",
    "SUMMARY_PREFIX",
    "CompactionResult",
    "ContextGuard",
    "estimate_text_tokens",
    "estimate_tokens",
    "is_summary_message",
    "is_user_turn",
]

logger = logging.getLogger(__name__)

_SYSTEM_ROLES = ("system", "developer")

_ADVANCED_CUT_GOAL = 0.75
"""When the last user turns alone do not fit, aim below this share of the limit, so the next few turns do
not immediately trigger another summarising call."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """The outcome of :meth:`ContextGuard.check_and_compact`.

    ``messages`` is the input list itself when nothing was compacted. ``kept_messages`` counts the original
    messages that survive verbatim (system, pinned, tail); the summary message is not among them.
    """

    messages: list[Message]
    compacted: bool
    original_messages: int
    kept_messages: int
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    head: list[Message]
    summarised: list[Message]
    carried: list[Message]
    tail: list[Message]
    summary_tokens: int


class ContextGuard:
    """Token budget and compaction of one conversation's history (see the module docstring)."""

    def __init__(
        self,
        llm: LLM,
        *,
        context_window: int,
        summary_reserve: int = 4096,
        safety_margin: int = 1024,
        keep_user_turns: int = 3,
    ) -> None:
        if summary_reserve < 0 or safety_margin < 0:
            raise ValueError("summary_reserve and safety_margin must not be negative")
        if keep_user_turns < 1:
            raise ValueError("keep_user_turns must be at least 1")
        budget = context_window - summary_reserve - safety_margin
        if budget <= 0:
            raise ValueError(
                f"context_window {context_window} leaves no budget after summary_reserve {summary_reserve} "
                f"and safety_margin {safety_margin}"
            )
        self.llm = llm
        self.context_window = context_window
        self.summary_reserve = summary_reserve
        self.safety_margin = safety_margin
        self.keep_user_turns = keep_user_turns
        self.budget = budget
        # Running total over the messages seen last time, so an appended history costs O(new messages).
        self._seen: list[Message] = []
        self._seen_total = 0
        self._last_tokens = 0

    def estimate(self, messages: Sequence[Message]) -> int:
        """Estimate the prompt tokens of ``messages``, counting only what changed since the last call.

        A history that grew by appending is recognised by identity, so only the new messages are counted.
        Messages already counted are treated as immutable (replace a message dict to change it); the last
        one is re-checked because callers sometimes extend it in place.
        """
        if type(messages) is not list:
            messages = list(messages)
        seen = self._seen
        count = len(seen)
        if (
            count
            and len(messages) >= count
            and (messages if len(messages) == count else messages[:count]) == seen
        ):
            last_tokens = estimate_message_tokens(seen[-1])
            self._seen_total += last_tokens - self._last_tokens
            self._last_tokens = last_tokens
        else:
            seen = self._seen = []
            count = self._seen_total = self._last_tokens = 0
        for message in messages[count:]:
            self._last_tokens = estimate_message_tokens(message)
            self._seen_total += self._last_tokens
            seen.append(message)
        return self._seen_total

    async def check_and_compact(
        self,
        messages: list[Message],
        *,
        usage: Usage | None = None,
        target_tokens: int | None = None,
    ) -> CompactionResult:
        """Return ``messages`` unchanged when within the limit, else a compacted copy.

        The limit is the budget, or ``target_tokens`` when given (the engine passes half the budget after
        the provider refused a prompt as too long). The summarising call's usage is added to ``usage``.
        """
        total = self.estimate(messages)
        limit = self.budget if target_tokens is None else target_tokens
        unchanged = CompactionResult(messages, False, len(messages), len(messages), None)
        if total <= limit:
            return unchanged
        plan = self._plan(messages, limit)
        if plan is None:
            logger.warning(
                "context over its limit (~%d > %d tokens) but nothing can be summarised; keeping the history",
                total,
                limit,
            )
            return unchanged
        try:
            summary = await self._summarise(plan, limit, usage)
        except Exception:
            logger.warning("context compaction failed; keeping the full history", exc_info=True)
            return unchanged
        if summary is None:
            logger.warning("context compaction got an empty summary; keeping the full history")
            return unchanged

        summary_message: Message = {
            "role": "user",
            "content": f"{SUMMARY_PREFIX}\n{summary}",
            SUMMARY_KEY: True,
        }
        compacted = [*plan.head, summary_message, *plan.carried, *plan.tail]
        kept = len(compacted) - 1
        after = self.estimate(compacted)
        logger.info(
            "context compacted: %d -> %d messages, ~%d -> ~%d tokens (limit %d)",
            len(messages),
            len(compacted),
            total,
            after,
            limit,
        )
        return CompactionResult(compacted, True, len(messages), kept, summary)

    def _plan(self, messages: list[Message], limit: int) -> _Plan | None:
        """Choose where to cut, or None when no cut brings the history under ``limit``."""
        n = len(messages)
        tokens = [estimate_message_tokens(m) for m in messages]
        head_end = 0
        while head_end < n and messages[head_end].get("role") in _SYSTEM_ROLES:
            head_end += 1
        carried_flags = _carried_flags(messages, head_end)
        turn_starts = [i for i in range(head_end, n) if is_user_turn(messages[i])]
        latest_turn = turn_starts[-1] if turn_starts else None
        default_cut = (
            turn_starts[-self.keep_user_turns] if len(turn_starts) >= self.keep_user_turns else head_end
        )

        summary_tokens = min(self.summary_reserve, max(limit // 4, 1))
        head_tokens = sum(tokens[:head_end])
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + tokens[i]

        chosen: int | None = None
        carried_tokens = carried_count = 0
        scan = head_end
        for cut in range(head_end + 1, n):
            # Accumulate what the older part [head_end, cut) keeps verbatim.
            while scan < cut:
                if carried_flags[scan]:
                    carried_tokens += tokens[scan]
                    carried_count += 1
                scan += 1
            if cut < default_cut or messages[cut].get("role") != "user":
                continue
            carry_latest = latest_turn is not None and latest_turn < cut and not carried_flags[latest_turn]
            summarisable = cut - head_end - carried_count - int(carry_latest)
            if summarisable <= 0:
                continue
            kept = head_tokens + carried_tokens + suffix[cut]
            if carry_latest and latest_turn is not None:
                kept += tokens[latest_turn]
            cost = kept + summary_tokens
            if cost > limit:
                continue
            if cut == default_cut or cost <= limit * _ADVANCED_CUT_GOAL:
                chosen = cut
                break
            if chosen is None:
                chosen = cut
        if chosen is None:
            return None
        return self._make_plan(messages, head_end, chosen, carried_flags, latest_turn, summary_tokens)

    @staticmethod
    def _make_plan(
        messages: list[Message],
        head_end: int,
        cut: int,
        carried_flags: list[bool],
        latest_turn: int | None,
        summary_tokens: int,
    ) -> _Plan:
        head = messages[:head_end]
        carried: list[Message] = []
        for i in range(head_end, cut):
            message = messages[i]
            if carried_flags[i] and message.get("role") in _SYSTEM_ROLES:
                head.append(message)
            elif carried_flags[i] or i == latest_turn:
                carried.append(message)
        return _Plan(
            head=head,
            summarised=messages[head_end:cut],
            carried=carried,
            tail=messages[cut:],
            summary_tokens=summary_tokens,
        )

    async def _summarise(self, plan: _Plan, limit: int, usage: Usage | None) -> str | None:
        """Ask the LLM for the summary; None when it answered nothing usable."""
        request = summary_request(plan.summarised, max_summary_tokens=plan.summary_tokens, max_tokens=limit)
        with call_purpose(CallPurpose.COMPACTION):
            response = await self.llm.chat(request)
        if usage is not None:
            usage.add(response.usage)
        summary = (response.content or "").strip()
        if not summary:
            return None
        budget = plan.summary_tokens - MESSAGE_OVERHEAD_TOKENS - estimate_text_tokens(SUMMARY_PREFIX) - 1
        return clip_to_tokens(summary, max(budget, 1)) or None


def _carried_flags(messages: list[Message], start: int) -> list[bool]:
    """Flag the messages that survive compaction verbatim: system messages and pinned tool exchanges."""
    n = len(messages)
    flags = [False] * n
    i = start
    while i < n:
        message = messages[i]
        end = i + 1
        if message.get("role") == "assistant" and message.get("tool_calls"):
            while end < n and messages[end].get("role") == "tool":
                end += 1
        keep = message.get("role") in _SYSTEM_ROLES or any(messages[j].get(PINNED_KEY) for j in range(i, end))
        if keep:
            for j in range(i, end):
                flags[j] = True
        i = end
    return flags
