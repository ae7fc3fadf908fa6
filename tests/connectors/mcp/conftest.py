"""Fixtures of the MCP connector tests: a real SDK server on loopback and an organisation that uses it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import cache

from agents import runtime
from connectors.mcp.pool import session_pool_close
from connectors.models import Connector
from connectors.tools import connector_tools_for_run
from platform_core.models import Organization, Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.factories import ConnectorFactory, OrganizationFactory, member_of
from tests.fakes.mcp_servers import FakeMcpServer


@pytest.fixture
def mcp_server() -> Iterator[FakeMcpServer]:
    with FakeMcpServer() as server:
        yield server


@pytest.fixture(autouse=True)
async def close_mcp_sessions() -> AsyncIterator[None]:
    """The pooled sessions of the test's event loop are closed before the loop goes."""
    cache.clear()
    yield
    await session_pool_close()
    cache.clear()


@pytest.fixture
def connector_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)


@dataclass
class McpWorld:
    """What :func:`tests.hooks.harness.blueprint_for` needs: ``erp`` is the MCP connector."""

    org: Organization
    requester: Any
    approver: Any
    agent: Any
    conversation: Any
    erp: Connector
    ledger: Connector


def mcp_connector(org: Organization, url: str, **extra: Any) -> Connector:
    extra.setdefault("allowed_private_hosts", ["127.0.0.1"])
    return ConnectorFactory(
        organization=org, name=extra.pop("name", "erp"), kind="mcp", base_url=url, **extra
    )


def build_world(*, llm_base_url: str, url: str, **extra: Any) -> McpWorld:
    org = OrganizationFactory(slug="acme", name="Acme")
    requester = member_of(org, Role.MEMBER, username="mia")
    approver = member_of(org, Role.APPROVER, username="april")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    agent = AgentFactory(organization=org, name="Assistant", instructions="Be brief.")
    connector = mcp_connector(org, url, **extra)
    agent.connectors.add(connector)
    conversation = ConversationFactory(organization=org, user=requester, agent=agent)
    return McpWorld(org, requester, approver, agent, conversation, connector, connector)
