"""An organisation whose payments over MCP wait for an approver: the world of the run-control and
key-lapse tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platform_core.models import Organization, Role
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.factories import (
    ConnectorActionFactory,
    OrganizationFactory,
    loopback_erp,
    member_of,
)
from tests.hooks.factories import ApprovalPolicyFactory


@dataclass
class PaymentsOverMcp:
    org: Organization
    requester: Any
    approver: Any

    @property
    def url_path(self) -> str:
        """The organisation's MCP endpoint, below the server's address."""
        return f"/mcp/orgs/{self.org.slug}/"


def payments_over_mcp(llm_base_url: str, erp_base_url: str) -> PaymentsOverMcp:
    """Acme (sync): its Purchasing assistant, exposed over MCP on the scripted LLM, pays through the
    ``erp`` connector's ``create_payment``, which waits for the approver april; mia is a member."""
    org = OrganizationFactory(slug="acme", name="Acme")
    mia = member_of(org, Role.MEMBER, username="mia")
    april = member_of(org, Role.APPROVER, username="april")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    erp = loopback_erp(org, erp_base_url)
    pay = ConnectorActionFactory(
        connector=erp,
        name="create_payment",
        method="POST",
        path_template="/payments",
        parameters={"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
    )
    ApprovalPolicyFactory(organization=org, actions=[pay], approver_open_ids=[], approver_users=[april])
    agent = AgentFactory(
        organization=org, name="Purchasing assistant", instructions="Be brief.", exposed_over_mcp=True
    )
    agent.connectors.add(erp)
    return PaymentsOverMcp(org, mia, april)
