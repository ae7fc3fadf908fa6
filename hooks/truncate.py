"""TruncateResult: observations longer than the agent's limit are cut, with a note saying how much."""

from __future__ import annotations

from dataclasses import replace

from django.utils import translation
from django.utils.translation import gettext as _

from agents.engine.hooks import ALLOW, HookContext, PostToolUseHook, PostVerdict, Rewrite
from agents.engine.tools import ToolResult
from hooks.conf import DEFAULT_MAX_OBSERVATION_CHARS

PRIORITY = 20


def truncation_note(*, kept: int, total: int, language: str | None = None) -> str:
    with translation.override(language):
        return _(
            "[Result truncated: %(cut)d of %(total)d characters were left out; only the first %(kept)d are "
            "shown. Ask for less data (filters, fewer rows or fields) if you need the rest.]"
        ) % {"cut": total - kept, "total": total, "kept": kept}


def truncate_text(text: str, *, limit: int, language: str | None = None) -> str:
    """``text`` cut to ``limit`` characters with a note, or unchanged when it fits."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n{truncation_note(kept=limit, total=len(text), language=language)}"


class TruncateResult(PostToolUseHook):
    """Cuts what the model sees of a tool result to ``limit`` characters (artifacts are kept)."""

    name = "truncate_result"
    priority = PRIORITY

    def __init__(self, *, limit: int = DEFAULT_MAX_OBSERVATION_CHARS, language: str | None = None) -> None:
        self.limit = limit
        self.language = language

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        if len(result.content) <= self.limit:
            return ALLOW
        cut = truncate_text(result.content, limit=self.limit, language=self.language)
        return Rewrite(replace(result, content=cut))
