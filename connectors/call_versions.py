"""The configuration version the guard rails read for a connector call, handed to the call's tool.

The guard rails read the organisation's configuration version just before a call runs (the audit log's
recorder, the last pre-tool-use hook, notes it here). The tool then takes the action, its connector's
config and decrypted secrets from the process's cache for that version without reading the version
again: a change an admin saved before that read is seen by the call, as it is by the guard rails. A tool
that finds no note (used without the guard rails, or a note taken already) reads the version itself.

Notes are per organisation, run and tool call id, taken once; a call that never runs leaves its note
until the guard rails' post-hook drops it, and the oldest go first beyond :data:`MAX_NOTES`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

MAX_NOTES = 4096

_notes: OrderedDict[tuple[Any, str, str], int] = OrderedDict()
_lock = threading.Lock()


def call_version_note(organization_id: Any, run_id: str, tool_call_id: str, version: int) -> None:
    """Note the version the guard rails of this call read (nothing for a call without ids)."""
    if not run_id or not tool_call_id:
        return
    with _lock:
        _notes[(organization_id, run_id, tool_call_id)] = version
        _notes.move_to_end((organization_id, run_id, tool_call_id))
        while len(_notes) > MAX_NOTES:
            _notes.popitem(last=False)


def call_version_take(organization_id: Any, run_id: str, tool_call_id: str) -> int | None:
    """The version noted for this call, once (``None``: none noted)."""
    if not run_id or not tool_call_id:
        return None
    with _lock:
        return _notes.pop((organization_id, run_id, tool_call_id), None)


def call_version_drop(organization_id: Any, run_id: str, tool_call_id: str) -> None:
    """Forget the note of a call that is over (blocked calls never take theirs)."""
    call_version_take(organization_id, run_id, tool_call_id)
