"""The admin never names another organisation's data, walked over every registered tenant admin.

An org admin of Acme works in the admin while Globex has one row of every tenant model. Every Globex
row carries a marker label (``GLOBEX-SECRET-...``) and dates in 1999, so a leak is grep-able in HTML.
For every admin found in ``admin.site._registry`` (new admins are covered automatically) the walk
checks the changelist and its list filters (with facets), changelists filtered by a Globex id, the
add form's choices, ``?<field>=<Globex id>`` prefills and ``?_changelist_filters``, a POST naming a
Globex id, the autocomplete endpoint for every relation, the own row's change, delete and history
pages, and the history and "view on site" pages of the Globex row.
"""

from __future__ import annotations

import datetime
import json
import uuid
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import pytest
from django import forms
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.db import models
from django.test import Client, RequestFactory
from django.urls import resolve, reverse
from django.utils import timezone

from platform_core.models import Membership, MembershipInvitation, Organization, Role
from tests.factories import TENANT_FACTORIES, MembershipFactory, OrganizationFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db

MARKER = "GLOBEX-SECRET"
FOREIGN_YEAR = 1999
GLOBAL_ADMIN_MODELS = {"auth.user", "auth.group"}
LABEL_FIELDS = (
    "name",
    "title",
    "username",
    "tool_name",
    "target_repr",
    "policy_name",
    "agent_name",
    "feishu_tenant_key",  # sign-in rules (issue 20)
)


def _tenant_admin_models() -> list[type[models.Model]]:
    return [m for m in admin.site._registry if m._meta.label_lower not in GLOBAL_ADMIN_MODELS]


@dataclass(frozen=True)
class World:
    """Acme's admin signed in, one Acme row per tenant model, and every Globex row by model."""

    client: Client
    user: models.Model
    own: dict[type[models.Model], models.Model]
    foreign: dict[type[models.Model], list[models.Model]]

    def foreign_pks(self, model: type[models.Model]) -> set[str]:
        return {str(obj.pk) for obj in self.foreign.get(model, [])}

    def foreign_uuids(self) -> set[str]:
        return {
            str(obj.pk) for objs in self.foreign.values() for obj in objs if isinstance(obj.pk, uuid.UUID)
        }

    def first_foreign(self, model: type[models.Model]) -> models.Model | None:
        rows = self.foreign.get(model, [])
        return rows[0] if rows else None


def _snapshot() -> dict[type[models.Model], set]:
    return {m: set(m._base_manager.values_list("pk", flat=True)) for m in apps.get_models()}


def _mark(model: type[models.Model], pks: set) -> None:
    """Give Globex rows marker labels and 1999 dates (a plain QuerySet: the audit log refuses updates)."""
    rows = models.QuerySet(model=model).filter(pk__in=pks)
    names = {f.name: f for f in model._meta.concrete_fields}
    for pk in pks:
        changes: dict[str, object] = {}
        for label in LABEL_FIELDS:
            if label in names:
                value = f"{MARKER}-{model._meta.model_name}-{pk}"
                changes[label] = value[: names[label].max_length or None]
        if "email" in names:
            changes["email"] = f"{MARKER.lower()}-{pk}@globex.example"
        for field in names.values():
            if isinstance(field, models.DateTimeField):
                changes[field.name] = timezone.make_aware(datetime.datetime(FOREIGN_YEAR, 6, 15, 12))
            elif isinstance(field, models.DateField):
                changes[field.name] = datetime.date(FOREIGN_YEAR, 6, 15)
        if changes:
            rows.filter(pk=pk).update(**changes)


@pytest.fixture
def world(client) -> World:
    acme = OrganizationFactory(slug="acme", name="Acme")
    acme_admin = member_of(acme, Role.ADMIN, username="acme-admin")
    own = {model: TENANT_FACTORIES[model](acme) for model in _tenant_admin_models()}

    before = _snapshot()
    globex = OrganizationFactory(slug="globex", name="Globex")
    for model in _tenant_admin_models():
        TENANT_FACTORIES[model](globex)
    MembershipFactory(organization=globex, role=Role.APPROVER)  # a user who belongs to Globex only
    after = _snapshot()

    foreign: dict[type[models.Model], list[models.Model]] = {}
    for model, pks in after.items():
        new = pks - before[model]
        if new:
            _mark(model, new)
            foreign[model] = list(model._base_manager.filter(pk__in=new))
    for model in [*_tenant_admin_models(), get_user_model()]:
        for obj in foreign.get(model, []):
            assert MARKER in str(obj) or isinstance(obj.pk, uuid.UUID), (
                f"{model.__name__} {obj.pk}: the walk cannot see this row's label leak; add its label field"
            )
    assert globex in foreign[Organization]
    client.force_login(acme_admin)
    return World(client=client, user=acme_admin, own=own, foreign=foreign)


def _url(model: type[models.Model], view: str, *args: object) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _assert_no_marker(response, where: str) -> None:
    text = response.content.decode().lower()
    assert MARKER.lower() not in text, f"{where}: another organisation's label leaked"
    assert f">{FOREIGN_YEAR}<" not in text and f"={FOREIGN_YEAR}" not in text, (
        f"{where}: another organisation's dates leaked"
    )


def _assert_no_foreign(world: World, response, where: str) -> None:
    """No marker and no Globex UUID (only for URLs that carry no Globex id of their own)."""
    _assert_no_marker(response, where)
    text = response.content.decode()
    leaked = [pk for pk in world.foreign_uuids() if pk in text]
    assert not leaked, f"{where}: another organisation's ids leaked: {leaked}"


def _relations(model: type[models.Model]) -> list[models.Field]:
    """Forward foreign keys, one-to-ones and many-to-manys of ``model``."""
    return [
        f
        for f in model._meta.get_fields()
        if f.is_relation and f.concrete and (f.many_to_one or f.one_to_one or f.many_to_many)
    ]


def _model_admin(model: type[models.Model]):
    return admin.site._registry[model]


def _choice_fields(form: forms.BaseForm) -> dict[str, forms.ModelChoiceField]:
    """Fields that offer model choices (a formset's hidden primary key offers none)."""
    return {
        n: f
        for n, f in form.fields.items()
        if isinstance(f, forms.ModelChoiceField) and not f.widget.is_hidden
    }


def _page_forms(response) -> list[forms.BaseForm]:
    found = [response.context["adminform"].form]
    for inline in response.context.get("inline_admin_formsets") or []:
        found.extend(inline.formset.forms)
        found.append(inline.formset.empty_form)
    return found


MODELS = _tenant_admin_models()
IDS = [m._meta.label_lower for m in MODELS]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_changelist_and_its_filters_name_no_other_organisations_objects(world, model):
    response = world.client.get(_url(model, "changelist"), {"_facets": "1"})
    assert response.status_code == 200
    _assert_no_foreign(world, response, f"{model.__name__} changelist")
    for spec in response.context["cl"].filter_specs:
        related = getattr(getattr(spec, "field", None), "related_model", None)
        for choice in getattr(spec, "lookup_choices", []):
            value, label = (choice if isinstance(choice, tuple) else (choice, choice))[:2]
            assert MARKER not in str(label), f"{model.__name__} filter {spec.title!r} lists {label}"
            if related is not None:
                assert str(value) not in world.foreign_pks(related), (
                    f"{model.__name__} filter {spec.title!r} lists another organisation's {value}"
                )


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_changelist_filtered_by_another_organisations_ids_shows_no_rows(world, model):
    lookups = []
    target = world.first_foreign(model)
    if target is not None:
        lookups.append(f"{model._meta.pk.name}__exact")
    for field in _relations(model):
        related = world.first_foreign(field.related_model)
        if related is not None:
            lookups.append((f"{field.name}__{field.target_field.name}__exact", related.pk))
    assert lookups
    for lookup in lookups:
        name, value = lookup if isinstance(lookup, tuple) else (lookup, target.pk)
        response = world.client.get(_url(model, "changelist"), {name: str(value), "_facets": "1"})
        where = f"{model.__name__} changelist ?{name}={value}"
        assert response.status_code in (200, 302, 400), where
        if response.status_code == 200:  # a filter without output drops its parameter: own rows only
            shown = {str(obj.pk) for obj in response.context["cl"].result_list}
            assert not shown & world.foreign_pks(model), where
        _assert_no_marker(response, where)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_add_form_offers_and_prefills_no_other_organisations_objects(world, model):
    model_admin = _model_admin(model)
    page = world.client.get(_url(model, "add"))
    if page.status_code == 403:
        assert not model_admin.has_add_permission(page.wsgi_request)
        pytest.skip(f"{model.__name__} cannot be added in the admin")
    assert page.status_code == 200
    _assert_no_foreign(world, page, f"{model.__name__} add page")
    for form in _page_forms(page):
        for name, field in _choice_fields(form).items():
            offered = {str(pk) for pk in field.queryset.values_list("pk", flat=True)}
            leaked = offered & world.foreign_pks(field.queryset.model)
            assert not leaked, f"{model.__name__}.{name} offers another organisation's {leaked}"

    form_fields = set(page.context["adminform"].form.fields)
    for field in _relations(model):
        foreign = world.first_foreign(field.related_model)
        if foreign is None or field.name not in form_fields:
            continue
        where = f"{model.__name__} add ?{field.name}={foreign.pk}"
        prefilled = world.client.get(_url(model, "add"), {field.name: str(foreign.pk)})
        assert prefilled.status_code == 200, where
        _assert_no_marker(prefilled, where)

        filters = quote(urlencode({f"{field.name}__{field.target_field.name}__exact": str(foreign.pk)}))
        preserved = world.client.get(_url(model, "add") + f"?_changelist_filters={filters}")
        _assert_no_marker(preserved, f"{model.__name__} add ?_changelist_filters")

        count = model._base_manager.count()
        posted = world.client.post(_url(model, "add"), {field.name: str(foreign.pk)})
        assert posted.status_code == 200, f"{where}: a POST naming it was not refused"
        assert field.name in posted.context["adminform"].form.errors, f"{where}: the field was not refused"
        assert model._base_manager.count() == count
        _assert_no_marker(posted, f"{where} (POST)")


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_autocomplete_answers_no_other_organisations_objects(world, model):
    for field in _relations(model):
        for term in ("", MARKER, "globex"):
            response = world.client.get(
                reverse("admin:autocomplete"),
                {
                    "app_label": model._meta.app_label,
                    "model_name": model._meta.model_name,
                    "field_name": field.name,
                    "term": term,
                },
            )
            where = f"autocomplete {model.__name__}.{field.name} term={term!r}"
            assert response.status_code in (200, 403, 404), where
            if response.status_code == 200:
                ids = {item["id"] for item in json.loads(response.content)["results"]}
                assert not ids & world.foreign_pks(field.related_model), where
                _assert_no_marker(response, where)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_own_object_pages_and_foreign_history_name_no_other_organisations_objects(world, model):
    own = world.own[model]
    for view in ("change", "history", "delete"):
        response = world.client.get(_url(model, view, own.pk))
        assert response.status_code in (200, 302, 403), f"{model.__name__} {view}"
        _assert_no_foreign(world, response, f"{model.__name__} {view} page of an own row")

    foreign = world.first_foreign(model)
    history = world.client.get(_url(model, "history", foreign.pk), follow=True)
    _assert_no_marker(history, f"{model.__name__} history of another organisation's row")
    content_type = ContentType.objects.get_for_model(model)
    on_site = world.client.get(reverse("admin:view_on_site", args=[content_type.pk, foreign.pk]))
    assert on_site.status_code == 404, f"{model.__name__} view on site of another organisation's row"


def test_the_autocomplete_walk_reaches_scoped_autocompletes(world):
    """The autocomplete walk is not vacuous: tenant admins declare autocompletes, and they answer."""
    declared = [(m, f) for m in MODELS for f in _model_admin(m).autocomplete_fields]
    assert declared
    for model, field_name in declared:
        response = world.client.get(
            reverse("admin:autocomplete"),
            {
                "app_label": model._meta.app_label,
                "model_name": model._meta.model_name,
                "field_name": field_name,
            },
        )
        assert response.status_code == 200, f"{model.__name__}.{field_name}"
        answered = {item["id"] for item in json.loads(response.content)["results"]}
        own_target = getattr(world.own[model], field_name)
        if own_target is not None:
            assert str(own_target.pk) in answered, f"{model.__name__}.{field_name}"


# --- declarations an admin may add later: every relation as raw id, list filter, all-values filter -----
#
# The registered admins declare few of these; the base must scope them all the same. Each tenant admin is
# redeclared with every relation as a raw-id field and a list filter, plus an all-values filter through
# each relation to a label field (Django lists the values of every row there), and walked directly.


def _hardened(model: type[models.Model]):
    relations = _relations(model)
    filters: list[str] = [f.name for f in relations]
    for field in relations:
        names = {f.name for f in field.related_model._meta.concrete_fields}
        filters += [f"{field.name}__{label}" for label in LABEL_FIELDS if label in names][:1]
    attrs = {
        "raw_id_fields": [f.name for f in relations if not f.many_to_many],
        "list_filter": filters,
        "autocomplete_fields": [],
    }
    base = type(_model_admin(model))
    return type(f"Hardened{base.__name__}", (base,), attrs)(model, admin.site)


def _request(world: World, path: str, method: str = "get", data: dict | None = None):
    request = getattr(RequestFactory(), method)(path, data or {})
    request.user = world.user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    request.resolver_match = resolve(path)
    request._dont_enforce_csrf_checks = True  # as the test client does
    return request


def _render(response):
    return response.render() if hasattr(response, "render") and not response.is_rendered else response


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_every_possible_relation_filter_names_no_other_organisations_objects(world, model):
    hardened = _hardened(model)
    response = _render(
        hardened.changelist_view(_request(world, _url(model, "changelist"), data={"_facets": "1"}))
    )
    assert response.status_code == 200
    _assert_no_foreign(world, response, f"{type(hardened).__name__} changelist")


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_every_possible_raw_id_field_and_prefill_names_no_other_organisations_objects(world, model):
    hardened = _hardened(model)
    if not hardened.has_add_permission(_request(world, _url(model, "add"))):
        pytest.skip(f"{model.__name__} cannot be added in the admin")
    form_fields = set(hardened.get_form(_request(world, _url(model, "add"))).base_fields)
    walked = 0
    for field in _relations(model):
        foreign = world.first_foreign(field.related_model)
        if foreign is None or field.name not in form_fields:
            continue
        walked += 1
        where = f"{type(hardened).__name__} add ?{field.name}={foreign.pk}"
        request = _request(world, _url(model, "add"), data={field.name: str(foreign.pk)})
        assert str(foreign.pk) not in {str(v) for v in hardened.get_changeform_initial_data(request).values()}
        _assert_no_marker(_render(hardened.add_view(request)), where)
        posted = _render(
            hardened.add_view(_request(world, _url(model, "add"), "post", {field.name: str(foreign.pk)}))
        )
        assert posted.status_code == 200, f"{where}: a POST naming it was not refused"
        _assert_no_marker(posted, f"{where} (POST redisplayed)")
    assert walked or not any(f.name in form_fields for f in _relations(model))


# --- memberships: users are not tenant data, so the rule is explicit ------------------------------


@pytest.fixture
def acme_admin_client(client, org, org_admin):
    client.force_login(org_admin)
    return client


def _membership_form(page):
    return page.context["adminform"].form


def test_membership_prefill_of_a_non_member_names_nobody(acme_admin_client, other_org):
    outsider = member_of(other_org, Role.MEMBER, username="globex-secret-bob", email="bob@globex.example")
    page = acme_admin_client.get(_url(MembershipInvitation, "add"), {"user": outsider.pk})
    assert page.status_code == 200
    text = page.content.decode()
    assert "globex-secret-bob" not in text and "bob@globex.example" not in text


def test_membership_prefill_of_an_own_member_shows_their_username(acme_admin_client, org):
    colleague = member_of(org, Role.MEMBER, username="carla")
    page = acme_admin_client.get(_url(MembershipInvitation, "add"), {"user": colleague.pk})
    assert 'value="carla"' in page.content.decode()


def test_membership_page_offers_no_way_to_browse_users(acme_admin_client, other_org):
    member_of(other_org, Role.MEMBER, username="globex-secret-bob")
    page = acme_admin_client.get(_url(MembershipInvitation, "add"))
    text = page.content.decode()
    assert reverse("admin:auth_user_changelist") not in text  # no raw-id lookup popup of all users
    assert "globex-secret-bob" not in text
    popup = acme_admin_client.get(reverse("admin:auth_user_changelist"), {"_popup": "1", "_to_field": "id"})
    assert popup.status_code == 403
    autocomplete = acme_admin_client.get(
        reverse("admin:autocomplete"),
        {
            "app_label": "platform_core",
            "model_name": "membershipinvitation",
            "field_name": "user",
            "term": "g",
        },
    )
    assert autocomplete.status_code == 403


@pytest.mark.parametrize("identifier", ["dora", "Dora@Example.com"], ids=["username", "email"])
def test_org_admin_invites_an_existing_user_by_exact_username_or_email(acme_admin_client, org, identifier):
    dora = UserFactory(username="dora", email="dora@example.com")
    response = acme_admin_client.post(
        _url(MembershipInvitation, "add"), {"user": identifier, "organization": org.pk, "role": Role.MEMBER}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert (
        MembershipInvitation.objects.unscoped().filter(user=dora, organization=org, role=Role.MEMBER).exists()
    )
    assert not Membership.objects.filter(user=dora, organization=org).exists()  # until dora accepts


@pytest.mark.parametrize(
    "identifier",
    ["dor", "DORA", "dora@example", "", "ghost", "retired"],
    ids=["prefix", "wrong-case-username", "partial-email", "empty", "unknown", "inactive"],
)
def test_membership_add_refuses_anything_but_an_exact_active_user(acme_admin_client, org, identifier):
    UserFactory(username="dora", email="dora@example.com")
    UserFactory(username="retired", email="retired@example.com", is_active=False)
    count = MembershipInvitation.objects.unscoped().count()
    response = acme_admin_client.post(
        _url(MembershipInvitation, "add"), {"user": identifier, "organization": org.pk, "role": Role.MEMBER}
    )
    assert response.status_code == 200
    assert "user" in _membership_form(response).errors
    assert MembershipInvitation.objects.unscoped().count() == count
    assert "dora@example.com" not in response.content.decode()


def test_membership_add_refuses_a_user_id(acme_admin_client, org, other_org):
    outsider = member_of(other_org, Role.MEMBER, username="globex-secret-bob")
    response = acme_admin_client.post(
        _url(MembershipInvitation, "add"),
        {"user": str(outsider.pk), "organization": org.pk, "role": Role.MEMBER},
    )
    assert response.status_code == 200 and "user" in _membership_form(response).errors
    assert not MembershipInvitation.objects.unscoped().filter(user=outsider, organization=org).exists()
    assert "globex-secret-bob" not in response.content.decode()


def test_membership_user_cannot_be_moved_to_another_user(acme_admin_client, org):
    membership = Membership.objects.get(user__username="ada")
    mallory = UserFactory(username="mallory")
    acme_admin_client.post(
        _url(Membership, "change", membership.pk),
        {"user": str(mallory.pk), "organization": org.pk, "role": Role.ADMIN},
    )
    membership.refresh_from_db()
    assert membership.user.username == "ada"


# --- superusers (platform operators) still see everything ----------------------------------------


def test_superuser_filters_and_prefills_see_every_organisation(client, org, other_org):
    from tests.agents.factories import AgentFactory, ConversationFactory

    ConversationFactory(organization=org, agent=AgentFactory(organization=org, name="acme-agent"))
    ConversationFactory(
        organization=other_org, agent=AgentFactory(organization=other_org, name="globex-agent")
    )
    outsider = member_of(other_org, Role.MEMBER, username="globex-bob")
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))

    conversations = client.get(reverse("admin:agents_conversation_changelist")).content.decode()
    assert "acme-agent" in conversations and "globex-agent" in conversations
    membership = client.get(_url(MembershipInvitation, "add"), {"user": outsider.pk}).content.decode()
    assert "globex-bob" in membership
