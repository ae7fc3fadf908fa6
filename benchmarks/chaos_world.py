"""Set up the chaos benchmark's organisation in the database named by ``DATABASE_URL`` (a subprocess).

    DATABASE_URL=postgres://…/agent_platform_bench python -m benchmarks.chaos_world --llm URL --erp URL --conversations N

A requester and an approver with Bearer tokens, the organisation's model endpoint (the benchmark's model),
an ``erp`` connector with ``list_payments`` (GET, a read) and ``create_payment`` (POST, held for the
approver above 50,000), both taking a ``ref`` that names the conversation, so every request the ERP
receives can be traced to its conversation; an agent using them, and ``N`` conversations. Prints what the
benchmark needs as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os

import django

REF = {"type": "string", "description": "The conversation's reference, as given in the question."}


def build(*, llm_base_url: str, erp_base_url: str, conversations: int) -> dict[str, object]:
    from agents.models import Conversation
    from platform_core.identity.api_keys.keys import api_token_issue
    from platform_core.models import Role
    from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
    from tests.agents.factories import AgentFactory, ModelConfigFactory
    from tests.factories import ConnectorActionFactory, ConnectorFactory, OrganizationFactory, member_of
    from tests.hooks.factories import ApprovalPolicyFactory

    org = OrganizationFactory(slug="chaos", name="Chaos")
    requester = member_of(org, Role.MEMBER, username="chaos-requester")
    approver = member_of(org, Role.APPROVER, username="chaos-approver")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True, timeout=60)
    erp = ConnectorFactory(
        organization=org, name="erp", base_url=erp_base_url, allowed_private_hosts=["127.0.0.1"]
    )
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
    agent = AgentFactory(
        organization=org, name="Chaos", instructions="Answer briefly.", completion_check=False
    )
    agent.connectors.add(erp)
    rows = Conversation.objects.bulk_create(
        Conversation(organization=org, user=requester, agent=agent, title=f"chaos {n}")
        for n in range(conversations)
    )
    return {
        "org": org.slug,
        "requester_token": api_token_issue(user=requester, name="chaos")[1],
        "approver_token": api_token_issue(user=approver, name="chaos")[1],
        "conversations": [str(c.pk) for c in rows],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm", required=True)
    parser.add_argument("--erp", required=True)
    parser.add_argument("--conversations", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    print(json.dumps(build(llm_base_url=args.llm, erp_base_url=args.erp, conversations=args.conversations)))


if __name__ == "__main__":
    main()
