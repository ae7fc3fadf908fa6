"""The system prompt's part about the person's memories: those recalled, and how to keep a new one."""

from __future__ import annotations

from agents.memory.recall import Recalled

MEMORIES_LIST = (
    "## What you remember about this person\n"
    "From your earlier conversations with the person you are talking with (only theirs). They may have "
    "changed since: what they say now wins."
)
REMEMBER_HINT = (
    "When they ask you to remember something about them, or tell you a lasting fact or preference that "
    "will matter in later conversations, keep it with the tool `{tool}`."
)


def memories_prompt(recalled: Recalled | None, *, tool_name: str) -> str:
    """The recalled memories as a list, with how to keep new ones when ``tool_name`` ("": no tool)."""
    parts = []
    if recalled is not None and recalled.memories:
        lines = [MEMORIES_LIST]
        lines.extend("- " + " ".join(memory.text.split()) for memory in recalled.memories)
        parts.append("\n".join(lines))
    if tool_name:
        parts.append(REMEMBER_HINT.format(tool=tool_name))
    return "\n\n".join(parts)
