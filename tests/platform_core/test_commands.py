from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from platform_core.models import Membership, Organization

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_org_add_member_and_token_give_working_api_access():
    run("create_org", "initech", "--name", "Initech")
    run("add_member", "initech", "peter", "--role", "admin", "--password", "s3cret-pass-word")
    token, advice = run("create_api_token", "peter")
    assert "not shown again" in advice
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.strip()}")
    response = client.get("/api/v1/orgs/initech/settings/")
    assert response.status_code == 200 and response.json()["name"] == "Initech"
    membership = Membership.objects.get(user__username="peter")
    assert membership.role == "admin" and membership.user.is_staff


def test_create_org_refuses_a_duplicate_slug(org):
    with pytest.raises(CommandError, match="already exists"):
        run("create_org", org.slug, "--name", "Again")


def test_add_member_refuses_an_unknown_org_and_role():
    with pytest.raises(CommandError, match="No organisation"):
        run("add_member", "nope", "u", "--role", "member")
    with pytest.raises(CommandError):
        run("add_member", "nope", "u", "--role", "emperor")


def test_create_api_token_refuses_an_unknown_user():
    with pytest.raises(CommandError, match="No active user"):
        run("create_api_token", "ghost")


def test_seed_demo_prints_the_password_once_and_is_idempotent(client):
    first, _ = run("seed_demo")
    password = next(line.split(":", 1)[1].strip() for line in first.splitlines() if "password:" in line)
    second, _ = run("seed_demo")
    assert "password:" not in second and password not in second
    assert Organization.objects.filter(slug="demo").count() == 1
    assert client.login(username="admin", password=password)
    assert client.get("/admin/platform_core/organization/").status_code == 200


def test_seed_demo_prints_the_address_the_platform_is_served_on(settings):
    settings.DEMO_API_BASE_URL = "http://127.0.0.1:8124/demo-api"
    out, _ = run("seed_demo")
    assert "Sign in at http://127.0.0.1:8124/login/" in out
