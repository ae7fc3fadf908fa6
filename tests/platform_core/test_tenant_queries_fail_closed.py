"""Tenancy fails closed: a query of an organisation-owned model that names no organisation raises."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.db.models import Count, Q

from connectors.models import Connector, ConnectorAction
from platform_core.models import OrgOwnedModel, UnscopedQueryError
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def connectors(org, other_org):
    return ConnectorFactory(organization=org, name="mine"), ConnectorFactory(
        organization=other_org, name="theirs"
    )


@pytest.mark.parametrize(
    "query",
    [
        pytest.param(lambda: list(Connector.objects.all()), id="list"),
        pytest.param(lambda: Connector.objects.get(name="mine"), id="get by another field"),
        pytest.param(lambda: Connector.objects.filter(pk=1).first(), id="first by id"),
        pytest.param(lambda: Connector.objects.count(), id="count"),
        pytest.param(lambda: Connector.objects.exists(), id="exists"),
        pytest.param(lambda: Connector.objects.aggregate(n=Count("pk")), id="aggregate"),
        pytest.param(lambda: Connector.objects.update(name="x"), id="update"),
        pytest.param(lambda: Connector.objects.all().delete(), id="delete"),
        pytest.param(lambda: list(Connector.objects.values_list("name", flat=True)), id="values"),
        pytest.param(lambda: list(Connector.objects.all().iterator()), id="iterator"),
        pytest.param(lambda: list(Connector.objects.exclude(organization=None)), id="exclude names none"),
        pytest.param(
            lambda: list(Connector.objects.filter(Q(organization__slug="acme") | Q(name="theirs"))),
            id="an organisation in only one branch of an or",
        ),
    ],
)
def test_a_query_that_names_no_organisation_raises(connectors, query):
    with pytest.raises(UnscopedQueryError, match="Connector was queried without an organisation"):
        query()


def test_a_query_scoped_to_an_organisation_sees_only_its_rows(org, connectors):
    assert [c.name for c in Connector.objects.for_org(org)] == ["mine"]
    assert Connector.objects.filter(organization=org).count() == 1
    assert Connector.objects.filter(organization__slug="globex").get().name == "theirs"
    assert Connector.objects.filter(Q(organization=org) & Q(name="mine")).exists()


def test_a_lookup_through_a_relation_to_an_organisation_scopes_the_query(org, connectors):
    action = ConnectorActionFactory(connector=connectors[0])
    assert list(ConnectorAction.objects.filter(connector__organization=org)) == [action]


def test_a_row_loaded_from_a_tenant_scopes_its_related_rows(org, connectors):
    action = ConnectorActionFactory(connector=connectors[0])
    assert list(connectors[0].actions.all()) == [action]
    assert list(ConnectorAction.objects.filter(connector=connectors[0])) == [action]
    prefetched = Connector.objects.for_org(org).prefetch_related("actions").get()
    assert list(prefetched.actions.all()) == [action]


def test_a_raw_parent_id_does_not_scope_the_query(connectors):
    with pytest.raises(UnscopedQueryError):
        list(ConnectorAction.objects.filter(connector_id=connectors[0].pk))


def test_unscoped_spans_every_organisation_on_purpose(connectors):
    assert Connector.objects.unscoped().count() == 2


def test_saving_reloading_and_cascading_use_the_plain_base_manager(org, connectors):
    mine = connectors[0]
    ConnectorActionFactory(connector=mine)
    mine.name = "renamed"
    mine.save()
    mine.refresh_from_db()
    assert mine.name == "renamed"
    mine.delete()  # cascades to its actions through the base manager
    assert not ConnectorAction.objects.for_org(org).exists()


def test_every_organisation_owned_model_fails_closed():
    owned = [m for m in apps.get_models() if issubclass(m, OrgOwnedModel)]
    assert len(owned) >= 15
    for model in owned:
        with pytest.raises(UnscopedQueryError):
            model.objects.exists()


def test_project_code_never_reads_through_the_plain_default_manager():
    """``all_organizations`` exists for Django's generic machinery; project code says ``unscoped()``."""
    root = Path(__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for package in ("agents", "connectors", "hooks", "platform_core")
        for path in (root / package).rglob("*.py")
        if "migrations" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ".all_organizations" in line
    ]
    assert offenders == []
