"""How much a memory holds, how many a person keeps, and how much of a prompt they may take."""

from __future__ import annotations

TEXT_MAX_CHARS = 500
"""One memory: a fact or a preference in a sentence or two."""

MAX_MEMORIES_PER_USER = 10_000
"""Per person and organisation: past it, ``remember`` is refused until some are deleted."""

PROMPT_TOKENS = 400
"""The recalled memories' share of a run's system prompt, in the engine's token estimate."""

MAX_RECALLED = 30
"""At most this many memories reach one prompt, however short."""

MAX_RETENTION_DAYS = 36500
