"""Per-process cache of what every run of an agent loads the same: its connectors, their actions, its
hook settings, the organisation's default model endpoints.

Entries are kept per agent under the organisation's configuration version
(:mod:`platform_core.config_version`), which the run reads with its own row. Any admin change to an
agent, a connector, an action, a model endpoint or hook settings bumps that version, so the next run of
that organisation, in any process, loads afresh. What must be checked at call time (read-only mode,
approval policies, rate limits, whether the action is still active) is never cached.

Cached values are shared by concurrent runs in several threads: they must not be mutated.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Agents kept per process; the least recently used go first.
MAX_AGENTS = 1024

_entries: OrderedDict[uuid.UUID, tuple[int, dict[str, Any]]] = OrderedDict()
_lock = threading.Lock()


def agent_config_cached(agent_id: uuid.UUID, version: int, key: str, load: Callable[[], T]) -> T:
    """``load()``'s value for the agent at this configuration version, loaded at most once per process
    (sync; two threads missing at once may both load, and either value is right)."""
    with _lock:
        entry = _entries.get(agent_id)
        if entry is not None and entry[0] == version:
            _entries.move_to_end(agent_id)
            values = entry[1]
            if key in values:
                return values[key]
    value = load()
    with _lock:
        entry = _entries.get(agent_id)
        if entry is None or entry[0] != version:
            if entry is not None and entry[0] > version:
                return value  # a newer run already cached a newer configuration: keep that one
            entry = (version, {})
            _entries[agent_id] = entry
            while len(_entries) > MAX_AGENTS:
                _entries.popitem(last=False)
        entry[1][key] = value
    return value


def agent_config_forget() -> None:
    """Empty the cache (tests that compare fresh and cached loads)."""
    with _lock:
        _entries.clear()


def run_config_cached(blueprint: Any, key: str, load: Callable[[], T]) -> T:
    """:func:`agent_config_cached` for a run (an ``agents.runtime.RunBlueprint``).

    A blueprint without a configuration version (built by hand, not by ``runtime_build``) keeps the
    value for its own run only, in its ``extra``.
    """
    version = getattr(blueprint, "config_version", None)
    if version is not None:
        return agent_config_cached(blueprint.agent_id, version, key, load)
    memo = getattr(blueprint, "extra", None)
    if memo is None:
        return load()
    if key not in memo:
        memo[key] = load()
    return memo[key]
