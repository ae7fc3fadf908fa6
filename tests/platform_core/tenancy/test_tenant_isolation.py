"""Tenant isolation by construction.

- Every HTTP route with an ``org_slug`` is walked from the URL resolver and called, for every method,
  by a member of another organisation: each answers 404 and changes nothing.
- Every tenant route (HTTP and websocket) must also be named by a ``@pytest.mark.cross_org(...)`` test
  that proves objects of another organisation are hidden behind the caller's own slug; this meta-test
  fails for a route nobody covered, so each new route arrives with its isolation test.
- Every admin of a tenant model inherits the org-scoped base, and a generic test proves that an org
  admin's changelist and change pages never show another organisation's rows.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from platform_core.admin.base import OrgScopedAdmin
from platform_core.wiring.routing import websocket_urlpatterns
from tests.factories import PASSWORD, TENANT_FACTORIES, member_of

TESTS_DIR = Path(__file__).resolve().parents[2]
# Models that are not tenant data, so their admins need not be org-scoped.
GLOBAL_ADMIN_MODELS = {"auth.user", "auth.group"}


def _walk(patterns, prefix="", names=()):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern), names)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.name


def tenant_routes() -> list[tuple[str, str]]:
    """(route pattern, name) of every HTTP route scoped by an organisation slug."""
    return sorted(
        {(route, name) for route, name in _walk(get_resolver().url_patterns) if "<slug:org_slug>" in route}
    )


def websocket_tenant_routes() -> list[tuple[str, str]]:
    return sorted((str(p.pattern), p.name) for p in _walk_ws(websocket_urlpatterns))


def _walk_ws(patterns):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk_ws(p.url_patterns)
        else:
            yield p


def covered_route_names() -> set[str]:
    """Route names named in ``pytest.mark.cross_org(...)`` anywhere in the test suite."""
    names: set[str] = set()
    for path in TESTS_DIR.rglob("test_*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "cross_org"
            ):
                names.update(
                    a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                )
    return names


def test_every_tenant_route_has_a_cross_org_test():
    routes = tenant_routes() + websocket_tenant_routes()
    assert routes, "the resolver walk found no tenant routes: the walk itself is broken"
    unnamed = [route for route, name in routes if not name]
    assert not unnamed, f"tenant routes need a name so tests can cover them: {unnamed}"
    missing = sorted({name for _, name in routes} - covered_route_names())
    assert not missing, f"tenant routes without a @pytest.mark.cross_org test: {missing}"


def _concrete(route: str, slug: str) -> str:
    url = route.replace("<slug:org_slug>", slug)
    url = re.sub(
        r"<(?:int|str|uuid|slug|path):(\w+)>",
        lambda m: "00000000-0000-0000-0000-000000000001" if "uuid" in m.group(0) else "1",
        url,
    )
    url = re.sub(r"\(\?P<[^>]+>[^)]+\)", "1", url)  # regex routes from DRF routers
    url = re.sub(r"\^|\$", "", url)
    return "/" + url.lstrip("/")


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
def test_every_tenant_route_answers_404_to_a_member_of_another_org(org, other_org, method):
    from rest_framework.test import APIClient

    outsider = member_of(org, "owner", username="outsider")
    client = APIClient()  # a signed-in session: API and page routes alike
    client.force_login(outsider)
    checked = 0
    for route, name in tenant_routes():
        if "format" in route:
            continue
        url = _concrete(route, other_org.slug)
        response = getattr(client, method)(url, {}, format="json")
        assert response.status_code in (404, 405), (
            f"{method.upper()} {url} ({name}) -> {response.status_code}"
        )
        if response.status_code == 404:
            checked += 1
        assert other_org.slug.encode() not in response.content
    assert checked > 0


def test_every_admin_of_a_tenant_model_is_org_scoped():
    for model, model_admin in admin.site._registry.items():
        if model._meta.label_lower in GLOBAL_ADMIN_MODELS:
            continue
        assert isinstance(model_admin, OrgScopedAdmin), (
            f"{model.__name__}'s admin must inherit OrgScopedAdmin"
        )
        assert model in TENANT_FACTORIES, (
            f"add a factory for {model.__name__} to tests.factories.TENANT_FACTORIES"
        )


def _tenant_admins():
    return [m for m in admin.site._registry if m._meta.label_lower not in GLOBAL_ADMIN_MODELS]


@pytest.mark.django_db
@pytest.mark.parametrize("model", _tenant_admins(), ids=lambda m: m._meta.label_lower)
def test_admin_pages_never_show_another_organisations_rows(client, org, other_org, model):
    own = TENANT_FACTORIES[model](org)
    foreign = TENANT_FACTORIES[model](other_org)
    user = member_of(org, "admin", username="scoped-admin")
    assert client.login(username=user.username, password=PASSWORD)
    info = (model._meta.app_label, model._meta.model_name)

    changelist = client.get(reverse("admin:{}_{}_changelist".format(*info)))
    assert changelist.status_code == 200
    assert changelist.context["cl"].result_count >= 1
    shown = {obj.pk for obj in changelist.context["cl"].result_list}
    assert own.pk in shown and foreign.pk not in shown

    change = client.get(reverse("admin:{}_{}_change".format(*info), args=[foreign.pk]))
    assert change.status_code in (302, 403, 404)
    delete = client.post(reverse("admin:{}_{}_delete".format(*info), args=[foreign.pk]), {"post": "yes"})
    assert delete.status_code in (302, 403, 404)
    assert model._default_manager.filter(pk=foreign.pk).exists()
