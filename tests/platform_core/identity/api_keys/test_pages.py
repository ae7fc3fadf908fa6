"""API keys in the Django admin (organisation keys, scoped like every admin page) and on the web app's
API keys page (personal keys, and the keys of organisations the user administers)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from platform_core.identity.api_keys.authentication import api_token_authenticate
from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import ApiKey, AuditLog, Role
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


# --- the admin --------------------------------------------------------------------------------
def test_an_org_admin_sees_and_revokes_only_their_organisations_keys_in_the_admin(
    org, other_org, org_admin, other_admin
):
    own = api_key_create(name="acme-bot", scopes=["read"], organization=org, actor=org_admin).key
    foreign = api_key_create(
        name="globex-bot", scopes=["read"], organization=other_org, actor=other_admin
    ).key
    client = _signed_in(org_admin)
    page = client.get(reverse("admin:platform_core_apikey_changelist")).content.decode()
    assert "acme-bot" in page and "globex-bot" not in page
    assert client.get(reverse("admin:platform_core_apikey_change", args=[foreign.pk])).status_code in (
        302,
        404,
    )
    client.post(
        reverse("admin:platform_core_apikey_changelist"),
        {"action": "revoke_selected", "_selected_action": [own.pk, foreign.pk]},
    )
    assert ApiKey.objects.get(pk=own.pk).revoked is True
    assert ApiKey.objects.get(pk=foreign.pk).revoked is False


def test_the_admin_creates_an_org_key_shows_it_once_and_offers_only_the_admins_organisations(
    org, other_org, org_admin
):
    client = _signed_in(org_admin)
    form = client.get(reverse("admin:platform_core_apikey_add")).content.decode()
    assert f'value="{org.pk}"' in form and f'value="{other_org.pk}"' not in form
    refused = client.post(
        reverse("admin:platform_core_apikey_add"),
        {"organization": other_org.pk, "name": "sneaky", "scopes": ["read"]},
    )
    assert refused.status_code == 200 and not ApiKey.objects.filter(name="sneaky").exists()
    response = client.post(
        reverse("admin:platform_core_apikey_add"),
        {"organization": org.pk, "name": "ci", "scopes": ["read", "chat"]},
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get(name="ci")
    raw = response.context["raw"]
    assert raw in response.content.decode()
    credential = api_token_authenticate(raw, ip_address=None)
    assert credential is not None and credential.organization == org and credential.scopes == {"read", "chat"}
    assert AuditLog.objects.filter(action="api_key.created", organization=org, actor=org_admin).exists()
    again = client.get(reverse("admin:platform_core_apikey_change", args=[key.pk])).content.decode()
    assert raw not in again


# --- the web app's page -----------------------------------------------------------------------
def test_the_page_creates_a_personal_key_shows_it_once_and_revokes_it(org, member):
    client = _signed_in(member)
    page = client.get(reverse("api-keys"))
    assert page.status_code == 200 and b"API keys" in page.content
    form = {
        "form_id": "f1",
        "name": "laptop",
        "owner": "personal",
        "scopes": ["read", "chat"],
        "expires": "30",
    }
    created = client.post(reverse("api-keys"), form)
    raw = created.context["created"].raw
    assert raw in created.content.decode() and created["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(name="laptop")
    assert key.user == member and key.organization is None and key.expires_at is not None
    assert raw not in client.get(reverse("api-keys")).content.decode()
    resent = client.post(reverse("api-keys"), form, follow=True)  # a reload sends the form again
    assert raw not in resent.content.decode() and ApiKey.objects.filter(name="laptop").count() == 1
    revoked = client.post(reverse("api-key-revoke", kwargs={"key_id": key.pk}), follow=True)
    assert revoked.status_code == 200
    assert (
        ApiKey.objects.get(pk=key.pk).revoked is True and api_token_authenticate(raw, ip_address=None) is None
    )


def test_the_page_offers_organisation_keys_to_admins_only(org, member, org_admin):
    assert b"Keys of Acme" not in _signed_in(member).get(reverse("api-keys")).content
    refused = _signed_in(member).post(
        reverse("api-keys"),
        {"form_id": "f2", "name": "x", "owner": org.slug, "scopes": ["read"], "expires": "never"},
    )
    assert refused.status_code == 200 and not ApiKey.objects.filter(name="x").exists()
    client = _signed_in(org_admin)
    assert b"Keys of Acme" in client.get(reverse("api-keys")).content
    client.post(
        reverse("api-keys"),
        {"form_id": "f3", "name": "bot", "owner": org.slug, "scopes": ["chat"], "expires": "never"},
    )
    key = ApiKey.objects.get(name="bot")
    assert key.organization == org and key.created_by == org_admin and key.expires_at is None


def test_nobody_revokes_another_users_or_another_organisations_key_from_the_page(
    org, other_org, member, other_admin
):
    personal = api_key_create(name="mine", scopes=["read"], owner=member, actor=member).key
    foreign_org = api_key_create(
        name="theirs", scopes=["read"], organization=other_org, actor=other_admin
    ).key
    intruder = member_of(org, Role.ADMIN, username="intruder")
    client = _signed_in(intruder)
    for key in (personal, foreign_org):
        assert client.post(reverse("api-key-revoke", kwargs={"key_id": key.pk})).status_code == 404
    assert not ApiKey.objects.filter(revoked=True).exists()


def test_the_top_bar_links_the_api_keys_page(member):
    page = _signed_in(member).get(reverse("api-keys")).content.decode()
    assert f'href="{reverse("api-keys")}" aria-current="page"' in page


@pytest.mark.parametrize(("language", "placeholder"), [("en", "&lt;key&gt;"), ("zh-hans", "&lt;密钥&gt;")])
def test_both_pages_show_the_header_with_its_key_placeholder_as_text(org, org_admin, language, placeholder):
    """``<key>`` is text on the page, not a tag the browser swallows ("Bearer ." was shown)."""
    client = _signed_in(org_admin)
    client.cookies["django_language"] = language
    page = client.get(reverse("api-keys")).content.decode()
    assert f"Authorization: Bearer {placeholder}</code>" in page
    created = client.post(
        reverse("admin:platform_core_apikey_add"), {"organization": org.pk, "name": "ci", "scopes": ["read"]}
    ).content.decode()
    assert f"Authorization: Bearer {placeholder}</code>" in created
