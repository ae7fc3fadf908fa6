"""Per-process cache of configuration rows that runs load the same again and again: an agent's
connectors, their actions, its hook settings, the organisation's default model endpoints (per agent);
the organisation's approval policies and rate limits (per organisation).

Entries are kept per owner (an agent, an organisation) under the organisation's configuration version
(:mod:`platform_core.config_version`), which the reader loads with the row it needs anyway: the run, or
the organisation's read-only flag before each connector call. Any admin change to those models bumps
the version, so the next reader, in any process, loads afresh. What is not configuration (whether
read-only mode is on, rate-limit counters, approval requests) is never cached.

Cached values are shared by concurrent runs in several threads: they must not be mutated.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

# Owners kept per process; the least recently used go first.
MAX_OWNERS = 2048

_entries: OrderedDict[Hashable, tuple[int, dict[str, Any]]] = OrderedDict()
_lock = threading.Lock()


def config_cached(owner: Hashable, version: int, key: str, load: Callable[[], T]) -> T:
    """``load()``'s value for ``owner`` (an agent's id, ``("organization", id)``) at this configuration
    version, loaded at most once per process (sync; two threads missing at once may both load, and
    either value is right)."""
    with _lock:
        entry = _entries.get(owner)
        if entry is not None and entry[0] == version:
            _entries.move_to_end(owner)
            values = entry[1]
            if key in values:
                return values[key]
    value = load()
    with _lock:
        entry = _entries.get(owner)
        if entry is None or entry[0] != version:
            # A reader that read an older version late replaces a newer entry: the next reader of the
            # newer version loads again (a miss, never a wrong value).
            entry = (version, {})
            _entries[owner] = entry
            while len(_entries) > MAX_OWNERS:
                _entries.popitem(last=False)
        entry[1][key] = value
    return value


def config_cache_forget() -> None:
    """Empty the cache (tests that compare fresh and cached loads)."""
    with _lock:
        _entries.clear()


class RunConfigScope(Protocol):
    """What a run's cache needs of the run (``agents.runtime.RunBlueprint`` has it): the agent, the
    organisation's configuration version read with the run, and the run's own memo."""

    @property
    def agent_id(self) -> Hashable: ...
    @property
    def config_version(self) -> int | None: ...
    @property
    def extra(self) -> dict[str, Any]: ...


def run_config_cached(blueprint: RunConfigScope, key: str, load: Callable[[], T]) -> T:
    """:func:`config_cached` for a run (an ``agents.runtime.RunBlueprint``).

    A blueprint without a configuration version (built by hand, not by ``runtime_build``) keeps the
    value for its own run only, in its ``extra``.
    """
    version = blueprint.config_version
    if version is not None:
        return config_cached(blueprint.agent_id, version, key, load)
    memo = blueprint.extra
    if key not in memo:
        memo[key] = load()
    return memo[key]


_MISSING: Any = object()


def config_cached_peek(owner: Hashable, version: int, key: str) -> tuple[bool, Any]:
    """``(True, value)`` when :func:`config_cached` holds ``key`` for ``owner`` at ``version``, else
    ``(False, None)``; loads nothing (async callers that may skip a hop to the database thread)."""
    with _lock:
        entry = _entries.get(owner)
        if entry is None or entry[0] != version:
            return False, None
        value = entry[1].get(key, _MISSING)
    return (False, None) if value is _MISSING else (True, value)
