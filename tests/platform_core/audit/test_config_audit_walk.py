"""Every configurable model is audited alike from the admin and the API: one row per add, change and
delete, naming the actor, with the state before and after, and secrets only as "changed".

The walk is a corpus of :class:`Case` rows (one per configurable model) crossed with the six ways to
change it; a new configurable model gets audited by adding its row here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.forms import CheckboxInput, ModelMultipleChoiceField, MultipleChoiceField
from django.urls import reverse

from agents.models import Agent, ModelConfig
from connectors.models import Connector, ConnectorAction
from hooks.models import AgentHookSettings, ApprovalPolicy, FeishuChannel, RateLimit
from platform_core.audit.actions import AUDIT_ACTION_LABELS
from platform_core.models import AuditLog, Membership, Role
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.factories import (
    PASSWORD,
    ConnectorActionFactory,
    ConnectorFactory,
    MembershipFactory,
    UserFactory,
)
from tests.hooks.factories import (
    AgentHookSettingsFactory,
    ApprovalPolicyFactory,
    FeishuChannelFactory,
    RateLimitFactory,
)

pytestmark = pytest.mark.django_db

OLD_SECRET = "old-secret-value-0001"
NEW_SECRET = "new-secret-value-0002"


@dataclass(frozen=True)
class Case:
    """How to make, add, change and find one configurable model through the admin and the API."""

    model: type
    entity: str  # the audit action's prefix
    make: Callable[[Any], Any]  # an existing row of the org
    admin_add: Callable[[Any], dict[str, Any]]  # add-form fields (the page's defaults fill the rest)
    admin_change: Callable[[Any], dict[str, Any]]
    api_list: Callable[[Any, Any], str]  # (org, row or None) -> list URL below /api/v1/orgs/<slug>/
    api_create: Callable[[Any], dict[str, Any]]
    api_update: Callable[[Any], dict[str, Any]]
    changed_field: str  # a field the change and the update alter (seen in before/after)
    secret: str | None = None  # the model field holding a secret the change replaces
    adds: bool = True  # False: an add is an invitation (memberships, issue 31: members/test_invitations)
    admin_secret_input: str | None = None
    pk_name: str = "pk"
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.entity


def _connector(org):
    found = Connector.objects.unscoped().filter(organization=org, name="erp").first()
    return found or ConnectorFactory(organization=org, name="erp", base_url="https://erp.example.com/api")


CASES = [
    Case(
        model=Agent,
        entity="agent",
        make=lambda org: AgentFactory(organization=org, instructions="Old instructions."),
        admin_add=lambda org: {
            "name": "Walker",
            "instructions": "Help with purchasing.",
            "connectors": [str(_connector(org).pk)],
        },
        admin_change=lambda org: {
            "instructions": "New instructions.",
            "execution_mode": "plan",
            "connectors": [str(_connector(org).pk)],
        },
        api_list=lambda org, row: "agents/",
        api_create=lambda org: {
            "name": "Walker",
            "instructions": "Help with purchasing.",
            "connectors": [str(_connector(org).pk)],
        },
        api_update=lambda org: {"instructions": "New instructions.", "connectors": [str(_connector(org).pk)]},
        changed_field="instructions",
    ),
    Case(
        model=ModelConfig,
        entity="model_config",
        make=lambda org: _model_config(org),
        admin_add=lambda org: {
            "name": "main",
            "base_url": "https://llm.example.com/v1",
            "model": "gpt-x",
            "api_key_input": NEW_SECRET,
        },
        admin_change=lambda org: {"model": "gpt-y", "api_key_input": NEW_SECRET},
        api_list=lambda org, row: "model-configs/",
        api_create=lambda org: {
            "name": "main",
            "base_url": "https://llm.example.com/v1",
            "model": "gpt-x",
            "api_key": NEW_SECRET,
        },
        api_update=lambda org: {"model": "gpt-y", "api_key": NEW_SECRET},
        changed_field="model",
        secret="api_key",
        admin_secret_input="api_key_input",
    ),
    Case(
        model=Connector,
        entity="connector",
        make=lambda org: ConnectorFactory(
            organization=org, auth_type="bearer", auth_secret=OLD_SECRET, description="old"
        ),
        admin_add=lambda org: {
            "name": "crm",
            "kind": "http",
            "base_url": "https://crm.example.com/api",
            "auth_type": "bearer",
            "auth_secret_new": NEW_SECRET,
        },
        admin_change=lambda org: {"description": "new", "auth_secret_new": NEW_SECRET},
        api_list=lambda org, row: "connectors/",
        api_create=lambda org: {
            "name": "crm",
            "kind": "http",
            "base_url": "https://crm.example.com/api",
            "auth_type": "bearer",
            "auth_secret": NEW_SECRET,
        },
        api_update=lambda org: {"description": "new", "auth_secret": NEW_SECRET},
        changed_field="description",
        secret="auth_secret",
        admin_secret_input="auth_secret_new",
    ),
    Case(
        model=ConnectorAction,
        entity="connector_action",
        make=lambda org: ConnectorActionFactory(connector=_connector(org), description="old"),
        admin_add=lambda org: {
            "connector": str(_connector(org).pk),
            "name": "list_orders",
            "description": "List orders.",
            "method": "GET",
            "path_template": "/orders",
            "parameters": json.dumps({"type": "object", "properties": {}}),
        },
        admin_change=lambda org: {"description": "new"},
        api_list=lambda org, row: f"connectors/{(row.connector if row else _connector(org)).pk}/actions/",
        api_create=lambda org: {
            "name": "list_orders",
            "description": "List orders.",
            "method": "GET",
            "path_template": "/orders",
            "parameters": {"type": "object", "properties": {}},
        },
        api_update=lambda org: {"description": "new"},
        changed_field="description",
    ),
    Case(
        model=ApprovalPolicy,
        entity="approval_policy",
        make=lambda org: ApprovalPolicyFactory(organization=org, connectors=[_connector(org)]),
        admin_add=lambda org: {"name": "Payments", "connectors": [str(_connector(org).pk)]},
        admin_change=lambda org: {"timeout_seconds": "900"},
        api_list=lambda org, row: "approval-policies/",
        api_create=lambda org: {"name": "Payments", "connectors": [str(_connector(org).pk)]},
        api_update=lambda org: {"timeout_seconds": 900},
        changed_field="timeout_seconds",
    ),
    Case(
        model=FeishuChannel,
        entity="feishu_channel",
        make=lambda org: FeishuChannelFactory(organization=org, base_url=""),
        admin_add=lambda org: {"name": "approvals", "app_id": "cli_walk", "app_secret_input": NEW_SECRET},
        admin_change=lambda org: {"default_chat_id": "oc_new", "app_secret_input": NEW_SECRET},
        api_list=lambda org, row: "feishu-channels/",
        api_create=lambda org: {"name": "approvals", "app_id": "cli_walk", "app_secret": NEW_SECRET},
        api_update=lambda org: {"default_chat_id": "oc_new", "app_secret": NEW_SECRET},
        changed_field="default_chat_id",
        secret="app_secret",
        admin_secret_input="app_secret_input",
    ),
    Case(
        model=RateLimit,
        entity="rate_limit",
        make=lambda org: RateLimitFactory(organization=org),
        admin_add=lambda org: {"name": "calls", "max_calls": "5", "period_seconds": "60"},
        admin_change=lambda org: {"max_calls": "20"},
        api_list=lambda org, row: "rate-limits/",
        api_create=lambda org: {"name": "calls", "max_calls": 5, "period_seconds": 60},
        api_update=lambda org: {"max_calls": 20},
        changed_field="max_calls",
    ),
    Case(
        model=AgentHookSettings,
        entity="agent_hook_settings",
        make=lambda org: AgentHookSettingsFactory(agent=AgentFactory(organization=org)),
        admin_add=lambda org: {
            "agent": str(AgentFactory(organization=org).pk),
            "max_observation_chars": "3000",
        },
        admin_change=lambda org: {"max_observation_chars": "5000"},
        api_list=lambda org, row: "agent-hook-settings/",
        api_create=lambda org: {
            "agent": str(AgentFactory(organization=org).pk),
            "max_observation_chars": 3000,
        },
        api_update=lambda org: {"max_observation_chars": 5000},
        changed_field="max_observation_chars",
    ),
    Case(
        model=Membership,
        entity="membership",
        make=lambda org: MembershipFactory(organization=org, user=UserFactory(username="walker")),
        admin_add=lambda org: {"user": UserFactory(username="walker").username, "role": "member"},
        admin_change=lambda org: {"role": "approver"},
        api_list=lambda org, row: "members/",
        api_create=lambda org: {"user": UserFactory(username="walker").username, "role": "member"},
        api_update=lambda org: {"role": "approver"},
        changed_field="role",
        adds=False,
    ),
]
ADDABLE = [case for case in CASES if case.adds]


def _model_config(org):
    config = ModelConfigFactory(organization=org, base_url="https://llm.example.com/v1")
    config.api_key = OLD_SECRET
    config.save()
    return config


# --- helpers ------------------------------------------------------------------------------------------


def _form_data(form) -> dict[str, Any]:
    """What a browser would post for ``form`` as the page rendered it."""
    data: dict[str, Any] = {}
    for name, form_field in form.fields.items():
        key = form.add_prefix(name)
        value = form[name].value()
        if isinstance(form_field.widget, CheckboxInput):
            if value:
                data[key] = "on"
        elif value is None:
            if not isinstance(
                form_field, (MultipleChoiceField, ModelMultipleChoiceField)
            ):  # an empty multi-select sends nothing
                data[key] = ""
        elif isinstance(value, (list, tuple)):
            data[key] = [str(v) for v in value]
        else:
            data[key] = str(value)
    return data


def _page_data(response) -> dict[str, Any]:
    data = _form_data(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update(_form_data(formset.management_form))
        for form in formset.forms:
            data.update(_form_data(form))
    return data


def _admin_url(model, view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _post_admin(client, url: str, changes: dict[str, Any]) -> None:
    page = client.get(url)
    assert page.status_code == 200, url
    data = {**_page_data(page), **changes}
    response = client.post(url, data)
    assert response.status_code == 302, (
        response.context["adminform"].form.errors if response.context else response
    )


def _audit_text(entry: AuditLog) -> str:
    return json.dumps([entry.before, entry.after, entry.target_repr])


def _one_row(case: Case, verb: str, since: int) -> AuditLog:
    rows = list(AuditLog.objects.filter(pk__gt=since, action=f"{case.entity}.{verb}"))
    others = list(
        AuditLog.objects.filter(pk__gt=since, action__startswith=f"{case.entity}.").exclude(
            action=f"{case.entity}.{verb}"
        )
    )
    assert len(rows) == 1 and not others, [(r.action, r.after) for r in rows + others]
    entry = rows[0]
    assert entry.action in AUDIT_ACTION_LABELS, f"{entry.action} has no readable label"
    assert entry.target_type == case.model._meta.label_lower
    return entry


def _last_pk() -> int:
    return AuditLog.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


@pytest.fixture
def admin_user(org):
    return MembershipFactory(
        organization=org, role=Role.OWNER, user=UserFactory(username="olive", is_staff=True)
    ).user


@pytest.fixture
def admin_client(client, admin_user):
    assert client.login(username=admin_user.username, password=PASSWORD)
    return client


@pytest.fixture(autouse=True)
def public_names(fake_dns):
    for name in ("llm.example.com", "crm.example.com", "erp.example.com"):
        fake_dns[name] = ["93.184.216.34"]
    return fake_dns


def _assert_created(case: Case, entry: AuditLog, actor) -> None:
    assert entry.actor == actor and entry.before is None and entry.after
    if case.secret:
        assert entry.after[case.secret] == "changed"
    assert NEW_SECRET not in _audit_text(entry)


def _assert_updated(case: Case, entry: AuditLog, actor) -> None:
    assert entry.actor == actor
    assert case.changed_field in entry.after and case.changed_field in entry.before
    assert entry.before[case.changed_field] != entry.after[case.changed_field]
    if case.secret:
        assert entry.after[case.secret] == "changed"
    text = _audit_text(entry)
    assert NEW_SECRET not in text and OLD_SECRET not in text


def _assert_deleted(case: Case, entry: AuditLog, actor, row_pk: Any) -> None:
    assert entry.actor == actor and entry.before and entry.target_id == str(row_pk)
    assert OLD_SECRET not in _audit_text(entry)
    assert not case.model._default_manager.filter(pk=row_pk).exists()


# --- the walk -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ADDABLE, ids=str)
def test_an_admin_add_writes_one_audit_row(case, org, admin_client, admin_user):
    changes = {"organization": str(org.pk), **case.admin_add(org)}
    since = _last_pk()
    _post_admin(admin_client, _admin_url(case.model, "add"), changes)
    _assert_created(case, _one_row(case, "created", since), admin_user)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_admin_change_writes_one_audit_row_with_before_and_after(case, org, admin_client, admin_user):
    row = case.make(org)
    changes = case.admin_change(org)
    since = _last_pk()
    _post_admin(admin_client, _admin_url(case.model, "change", row.pk), changes)
    _assert_updated(case, _one_row(case, "updated", since), admin_user)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_admin_delete_writes_one_audit_row_with_the_last_state(case, org, admin_client, admin_user):
    row = case.make(org)
    since = _last_pk()
    response = admin_client.post(_admin_url(case.model, "delete", row.pk), {"post": "yes"})
    assert response.status_code == 302
    _assert_deleted(case, _one_row(case, "deleted", since), admin_user, row.pk)


@pytest.mark.parametrize("case", ADDABLE, ids=str)
def test_an_api_create_writes_one_audit_row(case, org, client_for, admin_user):
    since = _last_pk()
    response = client_for(admin_user).post(
        f"/api/v1/orgs/{org.slug}/{case.api_list(org, None)}", case.api_create(org), format="json"
    )
    assert response.status_code == 201, response.content
    _assert_created(case, _one_row(case, "created", since), admin_user)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_api_update_writes_one_audit_row_with_before_and_after(case, org, client_for, admin_user):
    row = case.make(org)
    payload = case.api_update(org)
    since = _last_pk()
    response = client_for(admin_user).patch(
        f"/api/v1/orgs/{org.slug}/{case.api_list(org, row)}{row.pk}/", payload, format="json"
    )
    assert response.status_code == 200, response.content
    _assert_updated(case, _one_row(case, "updated", since), admin_user)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_api_delete_writes_one_audit_row_with_the_last_state(case, org, client_for, admin_user):
    row = case.make(org)
    since = _last_pk()
    response = client_for(admin_user).delete(f"/api/v1/orgs/{org.slug}/{case.api_list(org, row)}{row.pk}/")
    assert response.status_code == 204, response.content
    _assert_deleted(case, _one_row(case, "deleted", since), admin_user, row.pk)


def test_an_unchanged_save_writes_no_audit_row(org, admin_client):
    agent = AgentFactory(organization=org)
    since = _last_pk()
    _post_admin(admin_client, _admin_url(Agent, "change", agent.pk), {})
    assert not AuditLog.objects.filter(pk__gt=since).exists()
