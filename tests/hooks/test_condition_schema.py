"""A policy's condition is checked against the parameter schemas of the actions it covers when it is saved
(issue #15): an argument no covered action has, or a value of a type the argument cannot be compared with,
is refused in the admin and the API with a message naming the argument and the action. Each corpus is a
list: add to it when a new case is found."""

from __future__ import annotations

import pytest
from django.urls import reverse

from hooks.condition_schema import (
    ActionScope,
    UnknownArgument,
    WrongType,
    condition_schema_problems,
    covered_scopes,
)
from hooks.models import ApprovalPolicy
from platform_core.models import Role
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory, member_of

pytestmark = pytest.mark.django_db

# The demo ERP's create_payment, as imported from its OpenAPI document, plus a date and a nested object.
PAYMENT = {
    "type": "object",
    "properties": {
        "order_id": {"type": "integer"},
        "amount": {"type": "string"},
        "method": {"type": "string", "enum": ["bank_transfer", "card", "cash"]},
        "reference": {"type": "string"},
        "urgent": {"type": "boolean"},
        "due_date": {"type": "string", "format": "date"},
        "paid_at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "vendor": {
            "type": "object",
            "properties": {"country": {"type": "string"}, "rating": {"type": "number"}},
        },
        "extra": {"type": "object"},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}

FITS = [
    "amount > 10000",  # a decimal string compared with a number
    'amount == "50.00"',
    "order_id == 7",
    'order_id == "7"',
    'method == "card"',
    'method in ["card", "cash"]',
    'reference == "INV-1" or "INV" in reference',
    "urgent == true",
    'due_date < "2027-01-01"',
    'paid_at > "2026-12-01T10:00:00+08:00"',
    '"rush" in tags',
    'vendor.country not in ["CN", "HK"] and vendor.rating >= 4.5',
    "extra.anything == 1",  # an object without declared properties may hold anything
    "amount != null",
    "order_id > 0 and amount > 10000",
]


@pytest.mark.parametrize("condition", FITS)
def test_a_condition_that_fits_the_schema_has_no_problems(condition):
    scopes = [_scope("erp.create_payment", PAYMENT)]
    assert condition_schema_problems(condition, scopes) == []


# (condition, the argument, the problem's type)
MISFITS = [
    ("amonut > 10000", "amonut", UnknownArgument),
    ("vendor.name == 'Acme'", "vendor.name", UnknownArgument),
    ("order_id.value > 1", "order_id.value", UnknownArgument),
    ('amount > "abc"', "amount", None),  # text with text: fits (ordering two texts)
    ('order_id == "seven"', "order_id", WrongType),
    ("order_id == true", "order_id", WrongType),
    ("urgent == 1", "urgent", WrongType),
    ('urgent == "yes"', "urgent", WrongType),
    ("method == 1", "method", WrongType),  # an enum of words is never a number
    ("due_date < 20270101", "due_date", WrongType),
    ('due_date < "2027-01-01T00:00:00Z"', "due_date", WrongType),
    ('paid_at > "2026-12-01"', "paid_at", WrongType),
    ('due_date == "soon"', "due_date", WrongType),
    ("tags == 3", "tags", WrongType),
    ("3 in tags", "tags", None),  # a number fits text items: "3" in a list of texts is a number
    ("true in tags", "tags", WrongType),
    ('vendor == "Acme"', "vendor", WrongType),
    ('vendor.rating > "good"', "vendor.rating", WrongType),
    ('amount in [100, "abc"]', None, None),  # text "abc" fits a string argument
    ('order_id in [1, "x"]', "order_id", WrongType),
]


@pytest.mark.parametrize(("condition", "argument", "problem"), MISFITS)
def test_a_condition_that_does_not_fit_the_schema_is_a_problem_naming_the_argument(
    condition, argument, problem
):
    problems = condition_schema_problems(condition, [_scope("erp.create_payment", PAYMENT)])
    if problem is None:
        assert problems == []
    else:
        assert [(type(p), p.argument) for p in problems] == [(problem, argument)]


def test_an_action_without_declared_parameters_is_not_checked():
    assert condition_schema_problems("whatever > 1", [_scope("erp.ping", {})]) == []
    assert condition_schema_problems("whatever > 1", [_scope("erp.ping", {"type": "object"})]) == []
    open_ended = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True}
    assert condition_schema_problems("whatever > 1", [_scope("erp.ping", open_ended)]) == []


def test_a_connector_needs_the_argument_in_one_of_its_covered_actions_and_fitting_types_in_all(org):
    erp = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=erp, name="create_payment", method="POST", parameters=PAYMENT)
    ConnectorActionFactory(
        connector=erp,
        name="cancel_order",
        method="POST",
        parameters={"type": "object", "properties": {"order_id": {"type": "integer"}}},
    )
    ConnectorActionFactory(  # a read, not covered when the policy is for writes only
        connector=erp,
        name="list_orders",
        method="GET",
        parameters={"type": "object", "properties": {"amount": {"type": "boolean"}}},
    )
    writes = covered_scopes(actions=[], connectors=[erp], writes_only=True)
    assert condition_schema_problems("amount > 10000", writes) == []
    assert [p.argument for p in condition_schema_problems("total > 10000", writes)] == ["total"]
    everything = covered_scopes(actions=[], connectors=[erp], writes_only=False)
    problems = condition_schema_problems("amount > 10000", everything)
    assert [(type(p), p.action) for p in problems] == [(WrongType, "erp.list_orders")]


def _scope(label, schema):
    return ActionScope(label=label, schemas=((label, schema),))


# --- the admin and the API ------------------------------------------------------------------------------


@pytest.fixture
def payment_action(org):
    erp = ConnectorFactory(organization=org, name="erp")
    return ConnectorActionFactory(connector=erp, name="create_payment", method="POST", parameters=PAYMENT)


REFUSED = [
    ("amonut > 10000", ["amonut", "erp.create_payment"]),
    ('order_id == "seven"', ["order_id", "erp.create_payment", "a number"]),
    ("due_date < 20270101", ["due_date", "erp.create_payment", "a date"]),
]


@pytest.mark.parametrize(("condition", "named"), REFUSED)
def test_the_admin_refuses_a_condition_that_does_not_fit_the_covered_action(
    client, org, payment_action, condition, named
):
    admin = member_of(org, Role.ADMIN, username="ada")
    assert client.login(username=admin.username, password=PASSWORD)
    response = client.post(
        reverse("admin:hooks_approvalpolicy_add"),
        {
            "organization": org.pk,
            "name": "Large payments",
            "actions": [str(payment_action.pk)],
            "writes_only": "on",
            "condition": condition,
            "timeout_seconds": 600,
            "is_active": "on",
        },
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == 200
    errors = " ".join(response.context["adminform"].form.errors["condition"])
    assert all(word in errors for word in named), errors
    assert not ApprovalPolicy.objects.unscoped().exists()


@pytest.mark.parametrize(("condition", "named"), REFUSED)
def test_the_api_refuses_a_condition_that_does_not_fit_the_covered_action(
    client_for, org, payment_action, condition, named
):
    admin = member_of(org, Role.ADMIN, username="ada")
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/approval-policies/",
        {"name": "Large payments", "actions": [str(payment_action.pk)], "condition": condition},
        format="json",
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == 400, response.content
    errors = " ".join(response.json()["condition"])
    assert all(word in errors for word in named), errors
    assert not ApprovalPolicy.objects.unscoped().exists()


def test_a_fitting_condition_is_saved_in_the_admin_and_the_api(client, client_for, org, payment_action):
    admin = member_of(org, Role.ADMIN, username="ada")
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/approval-policies/",
        {"name": "Large payments", "actions": [str(payment_action.pk)], "condition": "amount > 10000"},
        format="json",
    )
    assert response.status_code == 201, response.content
    policy = ApprovalPolicy.objects.unscoped().get()
    patched = client_for(admin).patch(
        f"/api/v1/orgs/{org.slug}/approval-policies/{policy.pk}/", {"condition": "amount > '"}, format="json"
    )
    assert patched.status_code == 400
    patched = client_for(admin).patch(
        f"/api/v1/orgs/{org.slug}/approval-policies/{policy.pk}/", {"condition": "amonut > 1"}, format="json"
    )
    assert patched.status_code == 400 and "amonut" in " ".join(patched.json()["condition"])
    assert client.login(username=admin.username, password=PASSWORD)
    response = client.post(
        reverse("admin:hooks_approvalpolicy_change", args=[policy.pk]),
        {
            "organization": org.pk,
            "name": "Large payments",
            "actions": [str(payment_action.pk)],
            "writes_only": "on",
            "condition": 'amount > 10000 and method == "card"',
            "timeout_seconds": 600,
            "is_active": "on",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy.refresh_from_db()
    assert policy.condition == 'amount > 10000 and method == "card"'
