"""A purchasing organisation for guard-rail tests: an ERP HTTP connector on the loopback service, a
ledger database connector, an agent on the scripted LLM, a requester and an approver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.models import Agent, Conversation
from connectors.models import Connector, ConnectorAction
from hooks.models import ApprovalPolicy, FeishuChannel
from platform_core.models import Organization, Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.factories import (
    ConnectorActionFactory,
    ConnectorFactory,
    OrganizationFactory,
    loopback_erp,
    member_of,
)
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

PAYMENT_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
LEDGER_DSN = "postgresql://postgres@127.0.0.1:5432/postgres?connect_timeout=3"


@dataclass
class Purchasing:
    org: Organization
    requester: Any
    approver: Any
    agent: Agent
    conversation: Conversation
    erp: Connector
    ledger: Connector
    actions: dict[str, ConnectorAction]
    channel: FeishuChannel | None


def build_purchasing(
    *, llm_base_url: str, erp_base_url: str, feishu_base_url: str | None = None, slug: str = "acme"
) -> Purchasing:
    """Create the organisation (sync; call through ``database_sync_to_async`` from async tests)."""
    org = OrganizationFactory(slug=slug, name=slug.capitalize())
    requester = member_of(org, Role.MEMBER, username=f"{slug}-mia")
    approver = member_of(org, Role.APPROVER, username=f"{slug}-april")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    agent = AgentFactory(organization=org, name="Purchasing assistant", instructions="Be brief.")
    erp = loopback_erp(org, erp_base_url)
    ledger = ConnectorFactory(
        organization=org,
        name="ledger",
        kind="database",
        base_url="",
        dsn=LEDGER_DSN,
        allowed_private_hosts=["127.0.0.1"],
    )

    def http(name: str, method: str, path: str, **extra: Any) -> ConnectorAction:
        return ConnectorActionFactory(
            connector=erp,
            name=name,
            method=method,
            path_template=path,
            parameters=extra.pop("parameters", {"type": "object", "properties": {}}),
            **extra,
        )

    def sql(name: str, **extra: Any) -> ConnectorAction:
        return ConnectorActionFactory(
            connector=ledger,
            name=name,
            method="",
            path_template="",
            parameters=extra.pop("parameters", {"type": "object", "properties": {}}),
            **extra,
        )

    actions = {
        "create_payment": http("create_payment", "POST", "/payments", parameters=PAYMENT_SCHEMA),
        "list_payments": http("list_payments", "GET", "/payments"),
        "delete_payment": http(
            "delete_payment",
            "DELETE",
            "/payments/{payment_id}",
            parameters={"type": "object", "properties": {"payment_id": {"type": "string"}}},
            param_locations={"payment_id": "path"},
        ),
        # A POST that only searches: the admin declared it a read.
        "search_payments": http(
            "search_payments", "POST", "/payments/search", is_write=False, is_write_override=True
        ),
        "query": sql("query", free_form=True),
        "record_entry": sql("record_entry", sql_template="INSERT INTO entries (note) VALUES ('x')"),
        # A write template an admin mislabelled as a read: the SQL itself still counts.
        "purge_entries": sql(
            "purge_entries", sql_template="DELETE FROM entries", is_write=False, is_write_override=True
        ),
    }
    agent.connectors.add(erp, ledger)
    conversation = ConversationFactory(organization=org, user=requester, agent=agent)
    channel = None
    if feishu_base_url is not None:
        channel = FeishuChannelFactory(organization=org, name="approvals", base_url=feishu_base_url)
    return Purchasing(org, requester, approver, agent, conversation, erp, ledger, actions, channel)


def hold_large_payments(world: Purchasing, **overrides: Any) -> ApprovalPolicy:
    """The policy "Large payments" (sync): ``create_payment`` over 50,000 waits for ``world``'s approver;
    ``overrides`` set any other field of the policy (``approver_open_ids``, ``channel``, ``condition``)."""
    fields: dict[str, Any] = {
        "name": "Large payments",
        "actions": [world.actions["create_payment"]],
        "condition": "amount > 50000",
        "approver_users": [world.approver],
        **overrides,
    }
    return ApprovalPolicyFactory(organization=world.org, **fields)


def add_query_action(
    connector: Connector, name: str, path: str, *, param: str, json_type: str
) -> ConnectorAction:
    """A GET action on ``connector`` (sync) at ``path``, taking one query parameter ``param`` of ``json_type``."""
    return ConnectorActionFactory(
        connector=connector,
        name=name,
        method="GET",
        path_template=path,
        parameters={"type": "object", "properties": {param: {"type": json_type}}},
        param_locations={param: "query"},
    )
