"""The run's events as one-line progress messages for an MCP client ("Calling erp.list_payments",
"Waiting for approval by April"), in the caller's language. Answer deltas are not reported: the answer
is the call's result."""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _


class ProgressNarrator:
    """Turns one run's frames into progress lines; remembers the run's error, if any."""

    def __init__(self, *, language: str) -> None:
        self.language = language
        self.error = ""

    def line_for(self, frame: dict[str, Any]) -> str | None:
        """The progress line for ``frame``, or None when it is not worth a line."""
        event = frame.get("event")
        data = frame.get("data") or {}
        with translation.override(self.language):
            if event == "step":
                return _step_line(data)
            if event == "approval":
                return _approval_line(data)
            if event == "plan" and data.get("type") == "dag":
                return _("Planned %(count)d steps") % {"count": len(data.get("steps") or ())}
            if event == "error":
                self.error = str(data.get("message") or data.get("code") or "")
                return _("Error: %(message)s") % {"message": self.error}
            if event == "done":
                return _("Cancelled") if data.get("cancelled") else _("Done")
        return None


def _step_line(data: dict[str, Any]) -> str | None:
    kind, status = data.get("type"), data.get("status")
    if kind == "thinking" and status == "start":
        return _("Thinking (step %(iteration)s)") % {"iteration": data.get("iteration", "")}
    if kind == "iteration" and status == "start":
        return _("Calling %(tool)s") % {"tool": data.get("tool_name", "")}
    if kind == "iteration" and status == "done":
        if data.get("error"):
            return _("%(tool)s failed: %(error)s") % {
                "tool": data.get("tool_name", ""),
                "error": data["error"],
            }
        return _("%(tool)s answered") % {"tool": data.get("tool_name", "")}
    if kind == "answer" and status == "start":
        return _("Writing the answer")
    return None


def _approval_line(data: dict[str, Any]) -> str | None:
    tool = data.get("tool_name", "")
    status = data.get("status")
    if status == "pending":
        approvers = ", ".join(str(name) for name in data.get("approvers") or ()) or _("an approver")
        return _("%(tool)s is waiting for approval by %(approvers)s") % {"tool": tool, "approvers": approvers}
    if status == "approved":
        return _("%(tool)s was approved by %(person)s") % {
            "tool": tool,
            "person": data.get("decided_by") or "?",
        }
    if status == "rejected":
        reason = data.get("reason") or ""
        line = _("%(tool)s was rejected by %(person)s %(reason)s") % {
            "tool": tool,
            "person": data.get("decided_by") or "?",
            "reason": f"({reason})" if reason else "",
        }
        return line.strip()
    if status == "expired":
        return _("%(tool)s: no approval before the deadline") % {"tool": tool}
    if status == "cancelled":
        return _("%(tool)s: the approval request was cancelled") % {"tool": tool}
    return None
