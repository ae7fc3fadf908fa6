"""Set up the chaos benchmark's organisation in the database named by ``DATABASE_URL`` (a subprocess).

    DATABASE_URL=postgres://…/agent_platform_bench python -m benchmarks.chaos_world --llm URL --erp URL --conversations N

A requester and an approver with Bearer tokens, the organisation's model endpoint (the benchmark's model),
an ``erp`` connector with ``list_payments`` (GET, a read) and ``create_payment`` (POST, held for the
approver above 50,000), both taking a ``ref`` that names the conversation, so every request the ERP
receives can be traced to its conversation; an agent using them, and ``N`` conversations. Prints what the
benchmark needs as one JSON line.
"""

from __future__ import annotations

from benchmarks.common import world_main
from benchmarks.world import agent_conversations, org_with_erp

REF = {"type": "string", "description": "The conversation's reference, as given in the question."}


def build(*, llm_base_url: str, erp_base_url: str, conversations: int) -> dict[str, object]:
    from platform_core.identity.api_keys.keys import api_token_issue
    from platform_core.models import Role
    from tests.factories import ConnectorActionFactory, member_of
    from tests.hooks.factories import ApprovalPolicyFactory

    org, erp = org_with_erp(
        "chaos", "Chaos", llm_base_url=llm_base_url, erp_base_url=erp_base_url, model_timeout=60
    )
    requester = member_of(org, Role.MEMBER, username="chaos-requester")
    approver = member_of(org, Role.APPROVER, username="chaos-approver")
    ConnectorActionFactory(
        connector=erp,
        name="list_payments",
        description="List the open payments.",
        method="GET",
        path_template="/payments",
        parameters={"type": "object", "properties": {"ref": REF}, "required": ["ref"]},
        param_locations={"ref": "query"},
    )
    pay = ConnectorActionFactory(
        connector=erp,
        name="create_payment",
        description="Pay a supplier.",
        method="POST",
        path_template="/payments",
        parameters={
            "type": "object",
            "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}, "ref": REF},
            "required": ["amount", "currency", "ref"],
        },
    )
    ApprovalPolicyFactory(
        organization=org,
        name="Large payments",
        actions=[pay],
        condition="amount > 50000",
        approver_open_ids=[],
        approver_users=[approver],
        timeout_seconds=3600,
    )
    ids = agent_conversations(org, requester, erp, name="Chaos", title="chaos", count=conversations)
    return {
        "org": org.slug,
        "requester_token": api_token_issue(user=requester, name="chaos")[1],
        "approver_token": api_token_issue(user=approver, name="chaos")[1],
        "conversations": ids,
    }


if __name__ == "__main__":
    world_main(build)
