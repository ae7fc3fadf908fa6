"""The run's message history and the merged view of it that is sent to the provider.

Providers reject or mishandle consecutive messages of the same role, so before each call consecutive
same-role messages are merged (tool messages never are, nor assistant messages with ``tool_calls``).
The merged view is maintained as messages are appended, so a turn costs the same however long the
history is; the history itself keeps every message as appended (pins and metadata intact).

The merged view (:class:`WireView`) also remembers what is sent for each of its messages: the message
without the engine's ``_`` keys (and reasoning fields as the endpoint takes them, see
:func:`~agents.engine.reasoning.wire_messages`) and its JSON encoding, each made once, when the message is
first sent. :class:`~agents.engine.llm.OpenAICompatibleLLM` assembles the request body from these pieces, so
neither stripping nor encoding the history costs in proportion to its length. Messages are never edited in
place once appended (a changed message is a new dict put in its place, which the view notices).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, SupportsIndex

from agents.engine.llm import Message, wire_json
from agents.engine.reasoning import wire_messages


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


def merge_consecutive(messages: Iterable[Message]) -> WireView:
    """A new view where consecutive same-role messages are merged (never tool messages)."""
    wire = WireView()
    for message in messages:
        append_merged(wire, message)
    return wire


@dataclass(slots=True)
class Sent:
    """What is sent for the first ``len(messages)`` messages of a view: each message as sent, and its JSON."""

    messages: list[Message] = field(default_factory=list)
    encoded: list[bytes] = field(default_factory=list)

    def truncate(self, length: int) -> None:
        del self.messages[length:]
        del self.encoded[length:]


class WireView(list[Message]):
    """The provider view: a list of messages that remembers, per message, what is sent for it.

    :meth:`sent` strips and encodes only the messages it has not seen; any change to the list other than
    adding at its end (a merge replacing the last message, an insertion, a deletion) forgets what was
    remembered from the changed position on.
    """

    __slots__ = ("_sent", "_memos")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self._sent: dict[bool, Sent] = {}
        self._memos: dict[Callable[[Message], Any], list[Any]] = {}

    def memo(self, compute: Callable[[Message], Any]) -> list[Any]:
        """``compute`` of each message, in order, each computed once (``compute`` must depend on the message
        alone: the metering's prompt bound, say). The list is the view's own: read it, never change it."""
        values = self._memos.get(compute)
        if values is None:
            values = self._memos[compute] = []
        values.extend(map(compute, self[len(values) :]))
        return values

    def sent(self, *, replay: bool) -> Sent:
        """The messages as sent to an endpoint with (or without) reasoning replay, and their JSON encodings.

        Raises ``TypeError`` or ``ValueError`` for a message that is not JSON (nothing is remembered of it).
        """
        sent = self._sent.get(replay)
        if sent is None:
            sent = self._sent[replay] = Sent()
        for message in wire_messages(self[len(sent.messages) :], replay=replay):
            encoded = wire_json(message)
            sent.messages.append(message)
            sent.encoded.append(encoded)
        return sent

    def _changed(self, index: int) -> None:
        """Forget what was remembered for the messages from ``index`` on."""
        for sent in self._sent.values():
            if len(sent.messages) > index:
                sent.truncate(max(index, 0))
        for values in self._memos.values():
            del values[max(index, 0) :]

    def _position(self, index: SupportsIndex | slice) -> int:
        if isinstance(index, slice):
            return index.indices(len(self))[0] if index.step in (None, 1) else 0
        position = index.__index__()
        return max(position + len(self), 0) if position < 0 else position

    def __setitem__(self, index: Any, value: Any) -> None:
        self._changed(self._position(index))
        super().__setitem__(index, value)

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        self._changed(self._position(index))
        super().__delitem__(index)

    def insert(self, index: SupportsIndex, value: Message) -> None:
        self._changed(self._position(index))
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Message:
        self._changed(self._position(index))
        return super().pop(index)

    def remove(self, value: Message) -> None:
        self._changed(0)
        super().remove(value)

    def clear(self) -> None:
        self._changed(0)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._changed(0)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._changed(0)
        super().reverse()

    def __imul__(self, count: SupportsIndex) -> WireView:
        self._changed(0)
        return super().__imul__(count)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # A copy (``copy``, ``deepcopy``, pickle) starts with nothing remembered: sharing the record would let
        # one list's appends stand for the other's.
        return (WireView, (list(self),))


class Transcript:
    """The history (``messages``) and its provider view (``wire``), kept in step."""

    __slots__ = ("messages", "wire", "generation")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = list(messages)
        self.wire: WireView = merge_consecutive(self.messages)
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
