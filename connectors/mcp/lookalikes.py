"""Tools of an MCP connector that look like another connector's tools of the same organisation.

An MCP server chooses its tools' names and descriptions itself, so one server may offer
``create_payment`` beside the ERP connector's ``erp__create_payment`` and hope the model picks the wrong
one. The sync report and the connector's admin page name every such pair for the admin (a read: it
changes nothing). Only the organisation's own connectors are compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal

from connectors.models import Connector, ConnectorAction

NAME_RATIO = 0.85
DESCRIPTION_RATIO = 0.85
MIN_DESCRIPTION_CHARS = 20
_COMPARED_CHARS = 300
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_SPACES = re.compile(r"\s+")

Reason = Literal["same name", "similar name", "similar description"]


@dataclass(frozen=True, slots=True)
class Lookalike:
    """``tool`` (an action of the synced connector) resembles ``other_tool`` of ``other_connector``."""

    tool: str
    other_connector: str
    other_tool: str
    reason: Reason

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "other_connector": self.other_connector,
            "other_tool": self.other_tool,
            "reason": self.reason,
        }


def _name_key(name: str) -> str:
    return _NOT_ALNUM.sub("", name.lower())


def _text_key(text: str) -> str:
    return _SPACES.sub(" ", text.lower()).strip()[:_COMPARED_CHARS]


def _similar(a: str, b: str, ratio: float) -> bool:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= ratio and matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio


def _resemblance(mine: ConnectorAction, other: ConnectorAction, other_connector: str) -> Reason | None:
    own_name, other_name = _name_key(mine.name), _name_key(other.name)
    full_other = _name_key(f"{other_connector}__{other.name}")
    own_tool = _name_key(mine.mcp_tool or mine.name)
    if own_name and (own_name in (other_name, full_other) or own_tool in (other_name, full_other)):
        return "same name"
    if len(own_name) >= 4 and _similar(own_name, other_name, NAME_RATIO):
        return "similar name"
    own_text, other_text = _text_key(mine.description), _text_key(other.description)
    if (
        len(own_text) >= MIN_DESCRIPTION_CHARS
        and len(other_text) >= MIN_DESCRIPTION_CHARS
        and _similar(own_text, other_text, DESCRIPTION_RATIO)
    ):
        return "similar description"
    return None


def lookalikes_for_connector(*, connector: Connector) -> list[Lookalike]:
    """The active tools of ``connector`` that resemble an active tool of another connector of its
    organisation (two queries)."""
    mine = list(
        ConnectorAction.objects.filter(
            connector=connector, organization_id=connector.organization_id, is_active=True
        ).only("name", "description", "mcp_tool")
    )
    if not mine:
        return []
    others = list(
        ConnectorAction.objects.filter(
            organization_id=connector.organization_id,
            connector__organization_id=connector.organization_id,
            connector__is_active=True,
            is_active=True,
        )
        .exclude(connector_id=connector.pk)
        .select_related("connector")
        .only("name", "description", "connector__name")
        .order_by("connector__name", "name")
    )
    found: list[Lookalike] = []
    for action in sorted(mine, key=lambda a: a.name):
        for other in others:
            reason = _resemblance(action, other, other.connector.name)
            if reason is not None:
                found.append(
                    Lookalike(
                        tool=action.name,
                        other_connector=other.connector.name,
                        other_tool=f"{other.connector.name}__{other.name}",
                        reason=reason,
                    )
                )
    return found
