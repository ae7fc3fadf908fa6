"""The connector kinds the platform makes itself, never the connectors' form or API.

A knowledge base's connector comes with its knowledge base (``agents.knowledge``), the skill library's
with the organisation's first skill (``agents.skills``): the connectors' form and API neither create a
connector of these kinds nor turn one into another kind (nor another into one of them).
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from connectors.models import ConnectorKind

# Per kind: why a connector of it cannot be made here, and why one cannot change kind.
_MADE_ELSEWHERE: dict[str, tuple[Promise, Promise]] = {
    ConnectorKind.KNOWLEDGE.value: (
        _("Create knowledge bases under Knowledge bases; their connector comes with them."),
        _("A knowledge base's connector stays a knowledge base."),
    ),
    ConnectorKind.SKILLS.value: (
        _("The skill library's connector comes with the organisation's first skill (under Skills)."),
        _("The skill library's connector stays the skill library's."),
    ),
}


def kind_choice_error(current_kind: str | None, chosen_kind: str) -> str | None:
    """Why the connectors' form or API may not set ``chosen_kind`` on a connector of ``current_kind``
    (``None``: a new connector), or ``None`` when it may."""
    if chosen_kind == current_kind:
        return None
    if chosen_kind in _MADE_ELSEWHERE:
        return str(_MADE_ELSEWHERE[chosen_kind][0])
    if current_kind in _MADE_ELSEWHERE:
        return str(_MADE_ELSEWHERE[current_kind][1])
    return None
