"""Writes that collide with existing data answer a clear 4xx, never a 500.

- A name that another row of the organisation already has: 400 with an error on ``name``, on create and
  on rename, for every tenant endpoint whose model has an organisation-scoped unique constraint (the walk
  below fails for such an endpoint that is missing from ``DUPLICATE_CORPUS``).
- A delete that protected rows forbid (an agent with conversations): 409 with a message naming them, and
  nothing deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from agents.models import Agent, Budget, ModelConfig
from agents.skills.models import Skill
from agents.skills.services import skill_create
from connectors.models import Connector
from hooks.models import ApprovalPolicy, FeishuChannel
from platform_core.api_errors import api_exception_handler
from platform_core.models import MemberGroup, Membership, SignInRule
from platform_core.sso.providers import OIDCProviderConfig, socialaccount_providers
from tests.agents.factories import AgentFactory, BudgetFactory, ConversationFactory, ModelConfigFactory
from tests.factories import ConnectorFactory, MemberGroupFactory
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory
from tests.platform_core.sso.factories import SignInRuleFactory

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Endpoint:
    """A tenant list route, a factory of its rows and a valid create payload for a given name.

    ``field`` is the unique field a duplicate collides on (and its 400 names); ``settings`` are the
    deployment settings the route needs (a sign-in rule needs a configured provider).
    """

    route: str
    model: type[models.Model]
    factory: Callable[..., models.Model]
    payload: Callable[[Any, str], dict[str, Any]]
    field: str = "name"
    settings: dict[str, Any] = dataclass_field(default_factory=dict)

    def taken(self, row: models.Model) -> str:
        return getattr(row, self.field)

    def configured(self) -> override_settings:
        return override_settings(**self.settings)


SSO_PROVIDERS = socialaccount_providers(
    feishu_app_id="cli_conflicts",
    feishu_secret="s",
    feishu_base_url="https://open.feishu.cn",
    oidc=[
        OIDCProviderConfig(
            id="corp", name="Corp", server_url="https://sso.example.com", client_id="c", secret="s"
        )
    ],
)


DUPLICATE_CORPUS = [
    Endpoint(
        "model-configs",
        ModelConfig,
        ModelConfigFactory,
        lambda org, name: {"name": name, "base_url": "https://llm.example.com/v1", "model": "gpt-x"},
    ),
    Endpoint("agents", Agent, AgentFactory, lambda org, name: {"name": name}),
    Endpoint(
        "connectors",
        Connector,
        ConnectorFactory,
        lambda org, name: {"name": name, "kind": "http", "base_url": "https://erp.example.com/api"},
    ),
    Endpoint(
        "feishu-channels",
        FeishuChannel,
        FeishuChannelFactory,
        lambda org, name: {"name": name, "app_id": "cli_123", "default_chat_id": "oc_1"},
    ),
    Endpoint(
        "approval-policies",
        ApprovalPolicy,
        lambda organization: ApprovalPolicyFactory(
            organization=organization, connectors=[ConnectorFactory(organization=organization)]
        ),
        lambda org, name: {
            "name": name,
            "connectors": [str(ConnectorFactory(organization=org).pk)],
            "approver_open_ids": ["ou_boss"],
        },
    ),
    Endpoint(
        "budgets",
        Budget,
        BudgetFactory,
        lambda org, name: {
            "name": name,
            "scope": "organization",
            "metric": "tokens",
            "period": "day",
            "limit": 10,
        },
    ),
    Endpoint("groups", MemberGroup, MemberGroupFactory, lambda org, name: {"name": name}),  # issue 34
    Endpoint(
        "skills",
        Skill,
        lambda organization: skill_create(
            organization=organization,
            name=f"procedure-{uuid.uuid4().hex[:8]}",
            description="How to do it.",
            actor=None,
        ),
        lambda org, name: {"name": name, "description": "How to do it.", "body": "1. Do it."},
    ),
    Endpoint(
        "sign-in-rules",
        SignInRule,
        SignInRuleFactory,
        lambda org, key: {"provider": "feishu", "feishu_tenant_key": key, "role": "member"},
        field="feishu_tenant_key",
        settings={"SOCIALACCOUNT_PROVIDERS": SSO_PROVIDERS},
    ),
]


def _org_unique_models() -> set[type[models.Model]]:
    """Models with a unique constraint over the organisation and other fields."""
    found = set()
    for model in {m for m in _api_models()}:
        for constraint in model._meta.constraints:
            fields = getattr(constraint, "fields", ())
            if (
                isinstance(constraint, models.UniqueConstraint)
                and "organization" in fields
                and len(fields) > 1
            ):
                found.add(model)
    return found


def _api_models() -> set[type[models.Model]]:
    """Models behind the org-scoped API routes that accept writes."""
    found: set[type[models.Model]] = set()

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and "<slug:org_slug>" in prefix + str(p.pattern):
                view = getattr(p.callback, "cls", None)
                actions = getattr(p.callback, "actions", {}) or {}
                queryset = getattr(view, "queryset", None)
                if queryset is not None and {"post", "put", "patch"} & set(actions):
                    found.add(queryset.model)

    walk(get_resolver().url_patterns, "")
    return found


# Org-unique models without a name, whose duplicates are proven elsewhere.
NAMELESS_UNIQUE = {
    Membership,  # test_members: adding a user who is already a member answers 400 on "user"
}


def test_every_org_unique_api_model_is_in_the_duplicate_corpus():
    covered = {endpoint.model for endpoint in DUPLICATE_CORPUS} | NAMELESS_UNIQUE
    missing = _org_unique_models() - covered
    assert not missing, f"add these to DUPLICATE_CORPUS: {sorted(m.__name__ for m in missing)}"


def _url(org: Any, route: str, pk: Any = None) -> str:
    return f"/api/v1/orgs/{org.slug}/{route}/" + (f"{pk}/" if pk is not None else "")


@pytest.mark.parametrize("endpoint", DUPLICATE_CORPUS, ids=lambda e: e.route)
def test_creating_a_row_with_a_taken_name_answers_400_on_name(client_for, org_admin, org, endpoint):
    taken = endpoint.factory(organization=org)
    before = endpoint.model.objects.for_org(org).count()
    with endpoint.configured():
        response = client_for(org_admin).post(
            _url(org, endpoint.route), endpoint.payload(org, endpoint.taken(taken)), format="json"
        )
    assert response.status_code == 400, response.content
    assert endpoint.field in response.json(), response.content
    assert endpoint.model.objects.for_org(org).count() == before


@pytest.mark.parametrize("endpoint", DUPLICATE_CORPUS, ids=lambda e: e.route)
def test_renaming_a_row_to_a_taken_name_answers_400_on_name(client_for, org_admin, org, endpoint):
    taken = endpoint.factory(organization=org)
    renamed = endpoint.factory(organization=org)
    url = _url(org, endpoint.route, renamed.pk)
    with endpoint.configured():
        response = client_for(org_admin).patch(url, {endpoint.field: endpoint.taken(taken)}, format="json")
    assert response.status_code == 400, response.content
    assert endpoint.field in response.json(), response.content
    renamed.refresh_from_db()
    assert endpoint.taken(renamed) != endpoint.taken(taken)


@pytest.mark.parametrize("endpoint", DUPLICATE_CORPUS, ids=lambda e: e.route)
def test_a_name_taken_in_another_organisation_is_free(client_for, org_admin, org, other_org, endpoint):
    foreign = endpoint.factory(organization=other_org)
    with endpoint.configured():
        response = client_for(org_admin).post(
            _url(org, endpoint.route), endpoint.payload(org, endpoint.taken(foreign)), format="json"
        )
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("endpoint", DUPLICATE_CORPUS, ids=lambda e: e.route)
def test_saving_a_row_under_its_own_name_is_not_a_duplicate(client_for, org_admin, org, endpoint):
    row = endpoint.factory(organization=org)
    with endpoint.configured():
        response = client_for(org_admin).patch(
            _url(org, endpoint.route, row.pk), {endpoint.field: endpoint.taken(row)}, format="json"
        )
    assert response.status_code == 200, response.content


def test_deleting_an_agent_with_conversations_answers_409_and_keeps_it(client_for, org_admin, org):
    agent = AgentFactory(organization=org, name="Buyer")
    ConversationFactory(agent=agent)
    response = client_for(org_admin).delete(_url(org, "agents", agent.pk))
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "protected" and "conversation" in body["detail"].lower()
    assert Agent.objects.unscoped().filter(pk=agent.pk).exists()


def test_deleting_an_agent_with_conversations_is_explained_in_chinese(client_for, org_admin, org):
    agent = AgentFactory(organization=org)
    ConversationFactory(agent=agent)
    response = client_for(org_admin).delete(_url(org, "agents", agent.pk), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 409
    assert any("\u4e00" <= ch <= "\u9fff" for ch in response.json()["detail"]), response.content


def test_deleting_an_agent_without_conversations_still_works(client_for, org_admin, org):
    agent = AgentFactory(organization=org)
    assert client_for(org_admin).delete(_url(org, "agents", agent.pk)).status_code == 204
    assert not Agent.objects.unscoped().filter(pk=agent.pk).exists()


def _unique_violation() -> IntegrityError:
    AgentFactory(name="Twin")
    agent = Agent.objects.unscoped().get(name="Twin")
    try:
        with transaction.atomic():
            Agent.objects.create(organization=agent.organization, name="Twin")
    except IntegrityError as exc:
        return exc
    raise AssertionError("the database accepted a duplicate name")


def test_a_unique_violation_that_raced_past_validation_answers_409():
    response = api_exception_handler(_unique_violation(), {})
    assert response is not None and response.status_code == 409
    assert response.data["code"] == "conflict"


def test_other_integrity_errors_stay_server_errors():
    try:
        with transaction.atomic():
            Agent.objects.create(organization_id=None, name="orphan")
    except IntegrityError as exc:
        assert api_exception_handler(exc, {}) is None
    else:
        raise AssertionError("the database accepted an agent without an organisation")


def test_a_model_validation_error_from_a_service_answers_400_in_drf_shape():
    error = DjangoValidationError({"name": ["bad name"], "__all__": ["bad row"]})
    response = api_exception_handler(error, {})
    assert response is not None and response.status_code == 400
    assert response.data == {"name": ["bad name"], "non_field_errors": ["bad row"]}


@pytest.mark.parametrize("value", [str(10**18), str(2**63), str(10**30), "-" + str(10**30), "1e5", "abc"])
def test_replay_after_an_impossible_seq_is_empty_or_a_400_never_a_500(client_for, org, member, value):
    conversation = ConversationFactory(organization=org, user=member)
    url = f"{_url(org, 'conversations', conversation.pk)}events/?after_seq={value}"
    response = client_for(member).get(url, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code in (200, 400), response.content
    if response.status_code == 200:
        assert response.json()["results"] == []


@override_settings(SOCIALACCOUNT_PROVIDERS=SSO_PROVIDERS)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider": "feishu", "feishu_tenant_key": " t-acme "}, "feishu_tenant_key"),
        ({"provider": "feishu", "email_domain": "", "feishu_tenant_key": "t-acme\t"}, "feishu_tenant_key"),
        ({"provider": "corp", "email_domain": "@Acme.Example"}, "email_domain"),
    ],
)
def test_a_sign_in_rule_that_is_a_duplicate_once_normalised_answers_400_on_its_field(
    client_for, org_admin, org, body, field
):
    SignInRuleFactory(organization=org, feishu_tenant_key="t-acme")
    SignInRuleFactory(organization=org, provider="corp", feishu_tenant_key="", email_domain="acme.example")
    response = client_for(org_admin).post(_url(org, "sign-in-rules"), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.content
    assert SignInRule.objects.unscoped().filter(organization=org).count() == 2
