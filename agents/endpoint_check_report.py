"""The typed result of "Check endpoint" (``agents.endpoint_check``): one outcome per probe and the report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

ProbeStatus = Literal["works", "refused", "not_checked"]

PROBES: tuple[str, ...] = (
    "models",
    "chat",
    "tool_call",
    "forced_tool_choice",
    "parallel_tool_calls",
    "json_mode",
    "streaming",
    "vision",
    "reasoning",
)
"""Every probe of a check, in order."""


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What one probe found: ``works``, ``refused`` (``message`` says how) or ``not_checked`` (why)."""

    probe: str
    status: ProbeStatus
    message: str = ""

    def as_data(self) -> dict[str, str]:
        return {"probe": self.probe, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class EndpointCheckReport:
    """The result of one check: when, what each probe found, and the abilities that follow.

    ``refused_by_guard``: the SSRF guard's reason when the endpoint may not be reached (nothing was sent).
    ``key_verified`` / ``model_found``: None when the check could not tell. ``abilities`` holds only the keys
    the check could decide (see the module docstring).
    """

    checked_at: datetime
    elapsed: float
    probes: tuple[ProbeOutcome, ...]
    abilities: dict[str, bool]
    key_verified: bool | None = None
    model_found: bool | None = None
    refused_by_guard: str = ""

    def outcome(self, probe: str) -> ProbeOutcome:
        """The outcome of ``probe``."""
        return next(p for p in self.probes if p.probe == probe)

    def as_data(self) -> dict[str, Any]:
        """The JSON stored on the endpoint and returned by the API."""
        return {
            "checked_at": self.checked_at.isoformat(),
            "elapsed": round(self.elapsed, 3),
            "key_verified": self.key_verified,
            "model_found": self.model_found,
            "refused_by_guard": self.refused_by_guard,
            "abilities": dict(self.abilities),
            "probes": [p.as_data() for p in self.probes],
        }
