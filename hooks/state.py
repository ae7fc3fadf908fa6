"""Facts the hooks of one run share: what the approval gate decided for each tool call."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """The approval gate's verdict on one tool call."""

    approval_id: str
    status: str  # approved, rejected, expired, cancelled
    decided_by: str = ""


@dataclass
class RunGuardState:
    """Per-run, per-tool-call facts: the gate writes them, the audit hook reads (and forgets) them."""

    approvals: dict[str, GateOutcome] = field(default_factory=dict)

    def take_approval(self, tool_call_id: str) -> GateOutcome | None:
        return self.approvals.pop(tool_call_id, None)
