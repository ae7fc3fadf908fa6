"""A per-connector circuit breaker, in process.

After ``failure_threshold`` consecutive failed calls the circuit opens and calls are refused at once
for ``open_seconds``; then one trial call is let through (half-open): success closes the circuit,
failure opens it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

CircuitState = Literal["closed", "open", "half_open"]


def _now() -> float:
    return time.monotonic()


@dataclass(slots=True)
class CircuitBreaker:
    """Consecutive-failure breaker; thread-safe, shared by every event loop of the process."""

    failure_threshold: int = 5
    open_seconds: float = 30.0
    state: CircuitState = "closed"
    failures: int = 0
    opened_at: float = 0.0
    trial_in_flight: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def before_call(self) -> str | None:
        """None if the call may go ahead, else why it is refused. In half-open it claims the trial."""
        with self._lock:
            if self.state == "open":
                remaining = self.opened_at + self.open_seconds - _now()
                if remaining > 0:
                    return (
                        f"circuit open after {self.failures} consecutive failures; "
                        f"calls resume in {remaining:.0f} s"
                    )
                self.state = "half_open"
                self.trial_in_flight = False
            if self.state == "half_open":
                if self.trial_in_flight:
                    return "circuit half-open: a trial call is in progress"
                self.trial_in_flight = True
            return None

    def record_success(self) -> None:
        with self._lock:
            self.state, self.failures, self.trial_in_flight = "closed", 0, False

    def record_failure(self) -> None:
        with self._lock:
            self.failures += 1
            self.trial_in_flight = False
            if self.state == "half_open" or self.failures >= self.failure_threshold:
                self.state, self.opened_at = "open", _now()

    def release(self) -> None:
        """The call neither succeeded nor failed (e.g. refused by the SSRF guard): free the trial slot."""
        with self._lock:
            self.trial_in_flight = False


_breakers: dict[str, CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_for(
    connector_id: str, *, failure_threshold: int = 5, open_seconds: float = 30.0
) -> CircuitBreaker:
    """The connector's breaker; thresholds follow the connector's current configuration."""
    with _registry_lock:
        breaker = _breakers.get(connector_id)
        if breaker is None:
            breaker = _breakers[connector_id] = CircuitBreaker(failure_threshold, open_seconds)
        breaker.failure_threshold = max(1, failure_threshold)
        breaker.open_seconds = open_seconds
        return breaker


def open_breakers(connector_ids: Iterable[str]) -> set[str]:
    """Which of ``connector_ids`` have a circuit that is not closed in this process (read-only: no
    breaker is created)."""
    with _registry_lock:
        return {key for key in connector_ids if (b := _breakers.get(key)) is not None and b.state != "closed"}


def reset_breakers() -> None:
    """Forget every breaker (tests and process-wide resets)."""
    with _registry_lock:
        _breakers.clear()
