"""The offline demo model and memory: "Remember that I work in Shanghai" ("记住我在上海工作") keeps the rest
of the sentence with the run's remember tool; "What do you remember about me?" ("你记得我什么？") answers
with the memories the system prompt lists. A word heuristic, honest about being one; the demo model never
picks the remember tool for any other question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.memory.prompt import MEMORIES_LIST

_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?remember(?:\s+that)?[\s:,：，]+(?P<en>.+)$|^\s*(?:请)?记住[\s:,：，]*(?P<zh>.+)$",
    re.I | re.S,
)
_RECALL_WORDS = ("remember about me", "know about me", "记得我", "关于我")
_HEADS = {
    True: ("我记得：", "我还没有记住关于你的任何事。"),
    False: ("What I remember about you:", "I do not remember anything about you yet."),
}
_DRAFT = re.compile(
    r"Draft answer from the agent \(may be terse or incomplete\):\n(.*?)\n\nWrite the final", re.S
)
REMEMBER_SUFFIX = "__remember"


def is_remember_tool(function: Mapping[str, Any]) -> bool:
    return str(function.get("name", "")).endswith(REMEMBER_SUFFIX)


def memory_to_keep(tools: Sequence[Mapping[str, Any]], question: str) -> tuple[str, dict[str, str]] | None:
    """The remember tool's name and arguments when ``question`` asks to remember something, else ``None``."""
    found = _REMEMBER.match(question)
    tool = next((t.get("function", t) for t in tools if is_remember_tool(t.get("function", t))), None)
    if found is None or tool is None:
        return None
    text = (found.group("en") or found.group("zh") or "").strip().rstrip(".。!！")
    return (str(tool["name"]), {"text": text}) if text else None


def memory_kept_answer(content: str, *, zh: bool) -> str | None:
    """The answer after the remember tool kept (or already had) the memory; ``None`` for other results."""
    if content.startswith("Remembered."):
        return (
            "好的，我记住了。你可以在“记忆”页面查看、修改或删除它。"
            if zh
            else ("I will remember that. You can see, change or delete it on your Memories page.")
        )
    if content.startswith("Already remembered"):
        return "这件事我已经记得了。" if zh else "I already remember that."
    return None


def remembered_answer(messages: Sequence[Mapping[str, Any]], question: str, *, zh: bool) -> str | None:
    """The memories the system prompt lists, when ``question`` asks what the agent remembers."""
    lowered = question.lower()
    if not any(word in lowered for word in _RECALL_WORDS):
        return None
    system = next((m for m in messages if m.get("role") == "system"), None)
    text = str(system.get("content") or "") if system is not None else ""
    if MEMORIES_LIST not in text:
        return _HEADS[zh][1]
    listed = text.split(MEMORIES_LIST, 1)[1].split("\n\n", 1)[0]
    lines = [line for line in listed.splitlines() if line.startswith("- ")]
    return _HEADS[zh][0] + "\n\n" + "\n".join(lines)


def remembered_in_draft(synthesis_prompt: str) -> str | None:
    """The draft's list of memories (:func:`remembered_answer`), kept as the final answer: the
    synthesiser's prompt does not carry the agent's system prompt."""
    found = _DRAFT.search(synthesis_prompt)
    draft = found.group(1) if found else ""
    for head in (*_HEADS[True], *_HEADS[False]):
        if head in draft:
            return draft[draft.index(head) :]
    return None
