"""What an MCP server claims about a tool, and why the platform does not take its word for it.

Under the MCP specification a tool's annotations (``readOnlyHint``, ``destructiveHint``, …) are hints
from a server that may not be trusted. The platform therefore treats every MCP tool as a **write** until
an org admin confirms it as a read (:mod:`connectors.mcp.confirm`); the annotations only pre-fill the
suggestion, shown as the server's claim. Annotations that contradict each other (read-only *and*
destructive) make the tool a write that cannot be confirmed as a read. Pure functions: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ClaimKind = Literal["read", "write", "contradictory"]


@dataclass(frozen=True, slots=True)
class ServerClaim:
    """The server's claim about one tool: ``read``, ``write`` or ``contradictory``, and why."""

    kind: ClaimKind
    reason: str


def server_claim(annotations: Mapping[str, Any] | Any) -> ServerClaim:
    """Read a tool's stored annotations as the server's claim (anything malformed is a write)."""
    hints = annotations if isinstance(annotations, Mapping) else {}
    read_only = hints.get("readOnlyHint") is True
    destructive = hints.get("destructiveHint") is True
    if read_only and destructive:
        return ServerClaim("contradictory", "the server marks it both read-only and destructive")
    if read_only:
        return ServerClaim("read", "the server marks it read-only (readOnlyHint)")
    if destructive:
        return ServerClaim("write", "the server marks it destructive (destructiveHint)")
    return ServerClaim("write", "the server does not mark it read-only")


def annotations_contradict(annotations: Mapping[str, Any] | Any) -> bool:
    """Whether the annotations contradict each other (such a tool is always a write)."""
    return server_claim(annotations).kind == "contradictory"
