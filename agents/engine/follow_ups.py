"""Messages a user sends while a run is still working, taken into the loop between iterations."""

from __future__ import annotations

from collections import deque


class FollowUpQueue:
    """A per-conversation queue of follow-up messages.

    ``put()`` may be called from anywhere in the event loop's thread (the websocket consumer does);
    the agent ``drain()``s it at the points the spec allows, so it never waits on it.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: deque[str] = deque()

    def put(self, content: str) -> None:
        """Queue one follow-up message; blank messages are ignored."""
        if content and content.strip():
            self._items.append(content)

    def drain(self) -> list[str]:
        """Take every queued message, oldest first."""
        items: list[str] = []
        pop = self._items.popleft
        while self._items:  # popleft one by one: a put() from another thread is never lost
            items.append(pop())
        return items

    @property
    def pending(self) -> int:
        """How many messages wait to be drained."""
        return len(self._items)
