"""The run's message history and the merged view of it that is sent to the provider.

Providers reject or mishandle consecutive messages of the same role, so before each call consecutive
same-role messages are merged (tool messages never are, nor assistant messages with ``tool_calls``).
The merged view is maintained as messages are appended, so a turn costs the same however long the
history is; the history itself keeps every message as appended (pins and metadata intact).
"""

from __future__ import annotations

from collections.abc import Iterable

from agents.engine.llm import Message


def _mergeable(a: Message, b: Message) -> bool:
    role = a.get("role")
    return (
        role == b.get("role")
        and role != "tool"
        and isinstance(a.get("content"), str)
        and isinstance(b.get("content"), str)
        and not a.get("tool_calls")
        and not b.get("tool_calls")
    )


def _merged(a: Message, b: Message) -> Message:
    first, second = a["content"], b["content"]
    content = f"{first}\n\n{second}" if first and second else first or second
    return {"role": a["role"], "content": content}


def append_merged(wire: list[Message], message: Message) -> None:
    """Append ``message`` to ``wire``, merging it into the last message when they share a role."""
    if wire and _mergeable(wire[-1], message):
        wire[-1] = _merged(wire[-1], message)
    else:
        wire.append(message)


def merge_consecutive(messages: Iterable[Message]) -> list[Message]:
    """A new list where consecutive same-role messages are merged (never tool messages)."""
    wire: list[Message] = []
    for message in messages:
        append_merged(wire, message)
    return wire


class Transcript:
    """The history (``messages``) and its provider view (``wire``), kept in step."""

    __slots__ = ("messages", "wire", "generation")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = list(messages)
        self.wire: list[Message] = merge_consecutive(self.messages)
        # Bumped when the history is replaced, so checkpoints know to send it whole.
        self.generation = 0

    def append(self, message: Message) -> None:
        self.messages.append(message)
        append_merged(self.wire, message)

    def replace(self, messages: Iterable[Message]) -> None:
        """Swap in a new history (after compaction)."""
        self.messages = list(messages)
        self.wire = merge_consecutive(self.messages)
        self.generation += 1

    def __len__(self) -> int:
        return len(self.messages)
