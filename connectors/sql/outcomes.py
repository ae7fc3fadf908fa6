"""A database call's outcome as the tools report it: its text or its error, and how long it took."""

from __future__ import annotations

import time

from connectors.adapter_types import CallOutcome


def sql_error(message: str, started: float) -> CallOutcome:
    """A failed call that started at ``started`` (``time.perf_counter()``)."""
    return CallOutcome(
        status="error", content="", error=message, latency_ms=(time.perf_counter() - started) * 1000
    )


def sql_ok(
    text: str, rows: int, started: float, *, truncated: bool = False, request_bytes: int = 0
) -> CallOutcome:
    """A call that answered ``text`` (``rows`` rows, ``truncated`` if cut) and started at ``started``."""
    return CallOutcome(
        status="ok",
        content=text,
        row_count=rows,
        latency_ms=(time.perf_counter() - started) * 1000,
        request_bytes=request_bytes,
        response_bytes=len(text.encode()),
        truncated=truncated,
    )
