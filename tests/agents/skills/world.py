"""Skills as the tests use them: the demo company's purchase approval procedure and a helper that makes a
skill through the services and allows it to agents."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agents.models import Agent
from agents.skills.models import Skill
from agents.skills.services import skill_create
from platform_core.models import Organization

APPROVAL_BODY = """# Purchase approval

1. Look up the purchase order in the ERP.
2. Up to 10,000 CNY the buyer approves alone; above it an approver must approve before payment.
3. Above 100,000 CNY the finance director approves in writing.
"""
APPROVAL_DESCRIPTION = "How a purchase is approved: who approves which amount, in which order."


def skill_of(
    org: Organization,
    name: str = "purchase-approval",
    *,
    body: str = APPROVAL_BODY,
    description: str = APPROVAL_DESCRIPTION,
    files: Mapping[str, str] | None = None,
    agents: Iterable[Agent] = (),
    actor=None,
) -> Skill:
    """A skill of ``org`` made by the services (version 1), allowed to ``agents``."""
    skill = skill_create(
        organization=org, name=name, description=description, body=body, files=files, actor=actor
    )
    for agent in agents:
        agent.skills.add(skill)
    return skill
