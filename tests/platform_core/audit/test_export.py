"""The audit log exports as CSV and JSON Lines (streamed, filtered by date and action, one organisation's
rows only, admins only) from the API and from the admin's changelist; every entry shows a readable action
name in English and Chinese, and every action the code writes has one."""

from __future__ import annotations

import ast
import csv
import io
import json
from datetime import datetime
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone, translation

from hooks.models import ApprovalStatus
from platform_core.audit.actions import AUDIT_ACTION_LABELS
from platform_core.audit.audited import audit_entity
from platform_core.models import AuditLog, Role
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


def _at(day: str) -> datetime:
    return timezone.make_aware(datetime.fromisoformat(f"{day}T12:00:00"))


@pytest.fixture
def entries(org, other_org, org_admin):
    made = []
    for action, day in [
        ("agent.created", "2025-01-10"),
        ("agent.updated", "2025-02-10"),
        ("model_config.created", "2025-03-10"),
    ]:
        made.append(
            AuditLog.objects.create(
                organization=org,
                actor=org_admin,
                action=action,
                target_repr="Buyer",
                after={"name": "Buyer"},
                created_at=_at(day),
            )
        )
    AuditLog.objects.create(
        organization=other_org,
        action="agent.created",
        target_repr="Globex secret agent",
        created_at=_at("2025-02-01"),
    )
    return made


def _body(response) -> str:
    assert response.status_code == 200, getattr(response, "content", b"")
    assert response.streaming and response.is_async  # streamed without blocking the event loop

    async def collect() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)().decode()


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))


def export_url(org, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/api/v1/orgs/{org.slug}/audit-logs/export/?{query}"


# --- the API ----------------------------------------------------------------------------------------


def test_the_api_exports_csv_with_a_header_and_readable_action_names(client_for, org_admin, org, entries):
    response = client_for(org_admin).get(export_url(org, format="csv"))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"] and ".csv" in response["Content-Disposition"]
    rows = _csv_rows(_body(response))
    assert [(r["action"], r["action_label"], r["actor"]) for r in rows] == [
        ("agent.created", "Agent created", "ada"),
        ("agent.updated", "Agent changed", "ada"),
        ("model_config.created", "Model endpoint created", "ada"),
    ]
    assert json.loads(rows[0]["after"]) == {"name": "Buyer"}
    assert rows[0]["time"].startswith("2025-01-10T12:00:00")


def test_the_api_exports_json_lines_one_object_per_entry(client_for, org_admin, org, entries):
    response = client_for(org_admin).get(export_url(org, format="jsonl"))
    assert response["Content-Type"].startswith("application/jsonl")
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert [line["action"] for line in lines] == ["agent.created", "agent.updated", "model_config.created"]
    assert lines[0]["after"] == {"name": "Buyer"} and lines[0]["action_label"] == "Agent created"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"since": "2025-02-01"}, ["agent.updated", "model_config.created"]),
        ({"until": "2025-02-10"}, ["agent.created", "agent.updated"]),  # a date includes its whole day
        ({"since": "2025-02-01", "until": "2025-02-28"}, ["agent.updated"]),
        ({"since": "2025-02-10T12:00:01%2B00:00"}, ["model_config.created"]),
        ({"action": "agent.created"}, ["agent.created"]),
        ({"action": "agent.created", "since": "2025-02-01"}, []),
    ],
)
def test_the_api_export_honours_date_and_action_filters(
    client_for, org_admin, org, entries, params, expected
):
    for fmt in ("csv", "jsonl"):
        text = _body(client_for(org_admin).get(export_url(org, format=fmt, **params)))
        actions = (
            [r["action"] for r in _csv_rows(text)]
            if fmt == "csv"
            else [json.loads(line)["action"] for line in text.splitlines()]
        )
        assert actions == expected, (fmt, params)


@pytest.mark.parametrize(
    ("params", "field"),
    [({"since": "yesterday"}, "since"), ({"until": "2025-13-40"}, "until"), ({"format": "xml"}, "format")],
)
def test_a_bad_export_parameter_is_a_clear_400(client_for, org_admin, org, entries, params, field):
    response = client_for(org_admin).get(export_url(org, **{"format": "csv", **params}))
    assert response.status_code == 400 and field in json.loads(response.content)


@pytest.mark.parametrize("role", [Role.MEMBER, Role.APPROVER])
def test_only_owners_and_admins_may_export(client_for, org, entries, role):
    user = member_of(org, role, username=f"{role}-user")
    response = client_for(user).get(export_url(org, format="csv"))
    assert response.status_code == 403 and b"Buyer" not in response.content


@pytest.mark.cross_org("audit-log-export")
def test_an_export_holds_only_the_urls_organisation(client_for, org_admin, org, other_org, entries):
    text = _body(client_for(org_admin).get(export_url(org, format="jsonl")))
    assert "Globex" not in text
    assert client_for(org_admin).get(export_url(other_org, format="csv")).status_code == 404


def test_a_csv_cell_that_a_spreadsheet_would_run_is_neutralised(client_for, org_admin, org):
    AuditLog.objects.create(organization=org, action="agent.created", target_repr='=HYPERLINK("http://x")')
    rows = _csv_rows(_body(client_for(org_admin).get(export_url(org, format="csv"))))
    assert rows[0]["target"] == '\'=HYPERLINK("http://x")'


def test_a_large_export_streams_every_row_in_order(client_for, org_admin, org):
    AuditLog.objects.bulk_create(
        AuditLog(organization=org, action="agent.updated", target_repr=f"agent {n}") for n in range(1203)
    )
    lines = _body(client_for(org_admin).get(export_url(org, format="jsonl"))).splitlines()
    assert len(lines) == 1203 and len({json.loads(line)["target"] for line in lines}) == 1203


def test_the_audit_list_shows_readable_action_names(client_for, org_admin, org, entries):
    results = client_for(org_admin).get(f"/api/v1/orgs/{org.slug}/audit-logs/").json()["results"]
    assert {r["action"]: r["action_label"] for r in results}["agent.updated"] == "Agent changed"


# --- the admin --------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_the_changelist_offers_both_exports_with_its_filters(admin_client, entries):
    page = admin_client.get(reverse("admin:platform_core_auditlog_changelist") + "?action=agent.created")
    html = page.content.decode()
    assert reverse("admin:platform_core_auditlog_export", args=["csv"]) + "?action=agent.created" in html
    assert reverse("admin:platform_core_auditlog_export", args=["jsonl"]) + "?action=agent.created" in html
    assert "Agent created" in html  # readable names in the list and its filter


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["agent.created", "agent.updated", "model_config.created"]),
        ("?action=agent.updated", ["agent.updated"]),
        ("?created_at__year=2025&created_at__month=3", ["model_config.created"]),
        ("?q=model_config", ["model_config.created"]),
    ],
)
def test_the_admin_export_honours_the_changelists_filters_and_scope(admin_client, entries, query, expected):
    for fmt in ("csv", "jsonl"):
        response = admin_client.get(reverse("admin:platform_core_auditlog_export", args=[fmt]) + query)
        text = _body(response)
        assert "Globex" not in text
        actions = (
            [r["action"] for r in _csv_rows(text)]
            if fmt == "csv"
            else [json.loads(line)["action"] for line in text.splitlines()]
        )
        assert actions == expected, (fmt, query)


def test_a_member_cannot_use_the_admin_export(client, org, entries):
    user = member_of(org, Role.MEMBER, username="mia", is_staff=True)
    assert client.login(username=user.username, password=PASSWORD)
    response = client.get(reverse("admin:platform_core_auditlog_export", args=["csv"]))
    assert response.status_code in (302, 403) and not getattr(response, "streaming", False)


# --- readable names for every action ---------------------------------------------------------------


def _written_actions() -> tuple[set[str], list[str]]:
    """Action strings of every ``audit_log_write(action=...)`` in the code, and the calls whose action
    is computed (each must be listed in DYNAMIC_ACTIONS below)."""
    found: set[str] = set()
    computed: list[str] = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        if any(part in {".venv", "tests", "migrations", "var"} for part in path.relative_to(ROOT).parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            t.id: n.value.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "audit_log_write"):
                continue
            for keyword in node.keywords:
                if keyword.arg != "action":
                    continue
                values = (
                    [keyword.value.body, keyword.value.orelse]
                    if isinstance(keyword.value, ast.IfExp)
                    else [keyword.value]
                )
                for value in values:
                    if isinstance(value, ast.Constant):
                        found.add(value.value)
                    elif isinstance(value, ast.Name) and value.id in constants:
                        found.add(constants[value.id])
                    else:
                        computed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found, computed


# Where an action is computed, every value it can take. The walk fails for a computed call not named here.
CONFIGURABLE_ENTITIES = (
    "agent",
    "model_config",
    "connector",
    "connector_action",
    "approval_policy",
    "feishu_channel",
    "rate_limit",
    "agent_hook_settings",
    "knowledge_base",
    "document",
)
DYNAMIC_ACTIONS = {
    "platform_core/audit/audited.py": [
        f"{e}.{v}" for e in CONFIGURABLE_ENTITIES for v in ("created", "updated", "deleted")
    ],
    "hooks/services.py": [f"approval.{s}" for s in ApprovalStatus.values if s != ApprovalStatus.PENDING],
    # _organization_setting_set writes the action each of its callers names
    "platform_core/services.py": [
        "organization.approval_cooldown.changed",
        "organization.time_zone.changed",
        "organization.attachment_retention.changed",
        "organization.memory_retention.changed",
    ],
    # import_audit_write: an OpenAPI import and an MCP sync write their report under their own action
    "connectors/action_imports.py": ["connector.openapi_imported", "connector.mcp_tools_synced"],
    # _audit_change: confirming an MCP tool as a read and withdrawing that
    "connectors/mcp/confirm.py": [
        "connector_action.mcp_read_confirmed",
        "connector_action.mcp_read_withdrawn",
    ],
    # skill_create and skill_update: made or changed by hand, or by an import
    "agents/skills/services.py": ["skill.created", "skill.updated", "skill.imported"],
    # knowledge_base_update: a knowledge base's settings and its connector's, in one row
    "agents/knowledge/base_services.py": ["knowledge_base.updated"],
    # _close: the invitation declined, cancelled or accepted
    "platform_core/identity/members/invitations.py": [
        "membership.invitation_accepted",
        "membership.invitation_declined",
        "membership.invitation_cancelled",
    ],
}


def test_every_action_the_code_writes_has_a_readable_name():
    found, computed = _written_actions()
    assert len(found) >= 5, "the walk found too few audit_log_write calls: the walk itself is broken"
    unlisted = [c for c in computed if c.split(":")[0] not in DYNAMIC_ACTIONS]
    assert not unlisted, f"audit actions computed at {unlisted}: list their values in DYNAMIC_ACTIONS"
    written = found | {a for values in DYNAMIC_ACTIONS.values() for a in values}
    missing = sorted(written - set(AUDIT_ACTION_LABELS))
    assert not missing, f"audit actions without a readable name in platform_core.audit.actions: {missing}"


def test_the_audited_models_are_the_configurable_entities():
    from agents.models import Agent, Document, KnowledgeBase, ModelConfig
    from connectors.models import Connector, ConnectorAction
    from hooks.models import AgentHookSettings, ApprovalPolicy, FeishuChannel, RateLimit

    models = [
        Agent,
        ModelConfig,
        Connector,
        ConnectorAction,
        ApprovalPolicy,
        FeishuChannel,
        RateLimit,
        AgentHookSettings,
        KnowledgeBase,
        Document,
    ]
    assert tuple(audit_entity(m) for m in models) == CONFIGURABLE_ENTITIES


@pytest.mark.parametrize("action", sorted(AUDIT_ACTION_LABELS))
def test_every_action_name_reads_in_chinese(action):
    label = AUDIT_ACTION_LABELS[action]
    with translation.override("en"):
        english = str(label)
    with translation.override("zh-hans"):
        chinese = str(label)
    assert chinese != english and any("\u4e00" <= ch <= "\u9fff" for ch in chinese), (action, chinese)
