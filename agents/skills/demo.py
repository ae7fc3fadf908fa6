"""The demo organisation's skill: the demo company's purchase approval procedure, as a ``SKILL.md``
folder would hold it (the facts are those of the demo purchasing policy, ``agents/knowledge/
demo_documents``), allowed to the Purchasing assistant. Its example question ("What is our procedure
for approving a purchase of 18,600 CNY?") makes the offline demo model read it with
``skills__read_skill`` and answer from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.skills.models import Skill
from agents.skills.packaging import SkillFolder, skill_folder_of
from agents.skills.services import skill_create
from platform_core.models import Organization

if TYPE_CHECKING:
    from agents.models import Agent

DEMO_SKILL_NAME = "purchase-approval"
DEMO_SKILL_QUESTION = "What is our procedure for approving a purchase of 18,600 CNY?"
DEMO_SKILL_MD = """---
name: purchase-approval
description: The Demo Trading Co. purchase approval procedure (采购审批流程) - what to check, who approves a purchase or a payment of which amount, and in which order. Use it when asked how to approve, order or pay something.
metadata:
  owner: purchasing team
---

# Purchase approval procedure (Demo Trading Co.)

1. **Find the purchase order** in the ERP (`erp__get_purchase_order`, or `erp__list_purchase_orders` to
   find it) and check that it names one supplier, the items, the quantities and the agreed prices.
2. **A new supplier is checked before its first order**: its business licence, a letter from its bank
   for its account, and two references from other customers.
3. **Who approves, by amount of the payment:**
   - up to 10,000 CNY: the buyer alone;
   - above 10,000 CNY: an approver, an admin or the owner, before the payment is made (the payment waits
     in the approvals inbox until a person decides);
   - above 100,000 CNY: the finance director, in writing.
4. **Never split a payment** to stay under a limit.
5. **Pay the invoice** within 30 days of receipt when it matches its purchase order and the goods were
   received; an invoice that does not match goes back to the supplier with the reason.

Fill in `templates/approval-request.md` when an approval must be asked for in writing.
"""
DEMO_SKILL_FILES = {
    "templates/approval-request.md": (
        "# Approval request\n\n"
        "- Purchase order:\n"
        "- Supplier:\n"
        "- Amount (CNY):\n"
        "- Approver asked:\n"
        "- Reason for the purchase:\n"
    ),
}


def demo_skill_folder() -> SkillFolder:
    folder = skill_folder_of(DEMO_SKILL_MD, DEMO_SKILL_FILES)
    assert isinstance(folder, SkillFolder), folder
    return folder


def demo_skill_seed(org: Organization, agent: Agent) -> Skill:
    """The demo skill, made once (a skill of that name is left as it is), allowed to ``agent``."""
    skill = Skill.objects.for_org(org).filter(name=DEMO_SKILL_NAME).first()
    if skill is None:
        folder = demo_skill_folder()
        skill = skill_create(
            organization=org,
            name=folder.name,
            description=folder.description,
            body=folder.body,
            files=folder.files,
            front_matter=folder.front_matter,
            actor=None,
        )
    agent.skills.add(skill)
    return skill
