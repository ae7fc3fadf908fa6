"""The idempotency key that an HTTP connector sends with the write requests of a run.

Each tool call of a run has the platform's idempotency key ``<run_id>:<tool_call_id>``, under which
the run's tool ledger records the call (:mod:`agents.engine.tool_context`). An HTTP connector sends a key
derived from it in a header (``Idempotency-Key`` unless the connector names another) with every
POST, PUT, PATCH and DELETE request of the call, retries included. A remote API that honours the
header can then recognise the same call arriving twice and answer it once.

The value is ``<run_id>:<tool_call_id>:<digest>``, where the digest is the first 16 hex digits of the
SHA-256 of the call's arguments. A model may reuse a tool call id in a later turn for another
call (the ledger treats that as a new call), and two different requests must not share a key; the
same call replayed after a resume has the same arguments, so it keeps its key. An id that is not
plain ASCII (letters, digits, ``.``, ``_``, ``~``, ``-``) or is longer than 100 characters is
replaced by ``h`` and 32 hex digits of its SHA-256, so the value is at most 218 ASCII characters.
The key holds no credential: the run id, the model's call id and a digest of arguments that the
request itself carries.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from agents.engine.tool_context import idempotency_key

DEFAULT_IDEMPOTENCY_HEADER = "Idempotency-Key"
KEYED_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY_CHARS = 255
_PLAIN_PART = re.compile(r"[A-Za-z0-9._~-]{1,100}")
# What the adapter accepts as a key from any caller: visible ASCII, no spaces.
KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(part: str) -> str:
    return part if _PLAIN_PART.fullmatch(part) else "h" + _sha256(part)[:32]


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """16 hex digits identifying the arguments (key order does not matter)."""
    canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return _sha256(canonical)[:16]


def connector_idempotency_key(*, run_id: str, tool_call_id: str, arguments: Mapping[str, Any]) -> str:
    """The header value for one tool call of a run (see the module docstring)."""
    if not run_id or not tool_call_id:
        raise ValueError("an idempotency key needs a run id and a tool call id")
    run_part, call_part = _plain(str(run_id)), _plain(tool_call_id)
    return f"{idempotency_key(run_part, call_part)}:{arguments_digest(arguments)}"
