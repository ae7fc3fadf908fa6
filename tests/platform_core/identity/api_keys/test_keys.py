"""API keys over REST: scopes per route, expiry, revocation at once, hashes only, audit rows, org keys
acting as their own service user within their organisation only."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from platform_core.identity.api_keys.authentication import api_token_authenticate
from platform_core.identity.api_keys.keys import api_key_create, api_key_revoke
from platform_core.models import ApiKey, AuditLog, Membership, Role
from tests.agents.factories import AgentFactory

pytestmark = pytest.mark.django_db


def _client(raw: str, ip: str = "127.0.0.1") -> APIClient:
    client = APIClient(REMOTE_ADDR=ip)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def _personal(user, *scopes: str, **kwargs) -> str:
    return api_key_create(name="k", scopes=scopes, owner=user, actor=user, **kwargs).raw


# --- scopes per route --------------------------------------------------------------------------
def test_read_scope_allows_get_routes_and_refuses_every_write(org, org_admin):
    AgentFactory(organization=org)
    client = _client(_personal(org_admin, "read"))
    assert client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200
    assert client.get(f"/api/v1/orgs/{org.slug}/members/").status_code == 200
    agent = AgentFactory(organization=org)
    refused = client.post(f"/api/v1/orgs/{org.slug}/conversations/", {"agent": agent.pk}, format="json")
    assert refused.status_code == 403 and "chat" in refused.json()["detail"]
    patch = client.patch(f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 2})
    assert patch.status_code == 403 and "admin" in patch.json()["detail"]
    org.refresh_from_db()
    assert org.approval_config_cooldown_hours == 0


def test_chat_scope_starts_conversations_but_neither_reads_nor_administers(org, org_admin):
    agent = AgentFactory(organization=org)
    client = _client(_personal(org_admin, "chat"))
    created = client.post(f"/api/v1/orgs/{org.slug}/conversations/", {"agent": agent.pk}, format="json")
    assert created.status_code == 201
    assert client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 403
    assert (
        client.post(f"/api/v1/orgs/{org.slug}/api-keys/", {"name": "x", "scopes": ["read"]}).status_code
        == 403
    )


def test_admin_scope_reaches_admin_routes_only_within_the_users_role(org, org_admin, member):
    admin_client = _client(_personal(org_admin, "admin"))
    assert (
        admin_client.patch(
            f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 2}
        ).status_code
        == 200
    )
    assert admin_client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 403  # no read scope
    member_client = _client(_personal(member, "read", "admin"))
    assert (
        member_client.patch(
            f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 5}
        ).status_code
        == 403
    )
    org.refresh_from_db()
    assert org.approval_config_cooldown_hours == 2


def test_existing_tokens_are_personal_keys_with_every_scope_and_no_expiry(client_for, org, org_admin):
    client = client_for(org_admin)
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 200
    assert (
        client.patch(f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 1}).status_code
        == 200
    )
    key = ApiKey.objects.get(user=org_admin)
    assert key.scopes == ["read", "chat", "admin"] and key.expires_at is None and key.organization is None


# --- expiry and revocation --------------------------------------------------------------------
def test_an_expired_key_is_refused(org, member):
    raw = _personal(member, "read", expires_at=timezone.now() + timedelta(hours=1))
    client = _client(raw)
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 200
    ApiKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 401
    assert api_token_authenticate(raw, ip_address=None) is None


def test_an_expiry_in_the_past_is_refused_at_creation(org, member):
    client = _client(_personal(member, "read", "admin"))
    past = (timezone.now() - timedelta(days=1)).isoformat()
    response = client.post("/api/v1/api-keys/", {"name": "old", "scopes": ["read"], "expires_at": past})
    assert response.status_code == 400 and "expires_at" in response.json()
    assert ApiKey.objects.filter(name="old").count() == 0


def test_a_revoked_key_is_refused_on_the_very_next_request(org, member):
    raw = _personal(member, "read", "admin")
    client = _client(raw)
    key_id = ApiKey.objects.get(user=member).pk
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 200
    revoked = client.post(f"/api/v1/api-keys/{key_id}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 401
    assert api_token_authenticate(raw, ip_address=None) is None


# --- shown once, hashes only ------------------------------------------------------------------
def test_the_raw_key_is_shown_once_and_only_its_hash_is_stored(org, org_admin, client_for):
    client = client_for(org_admin)
    response = client.post(
        f"/api/v1/orgs/{org.slug}/api-keys/", {"name": "ci", "scopes": ["read", "chat"]}, format="json"
    )
    assert response.status_code == 201
    raw = response.json()["key"]
    assert raw.startswith("apt_") and response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(pk=response.json()["id"])
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    listed = client.get(f"/api/v1/orgs/{org.slug}/api-keys/").json()["results"]
    assert all("key" not in row for row in listed)
    assert client.get(f"/api/v1/orgs/{org.slug}/api-keys/{key.pk}/").json().get("key") is None
    secret_part = raw[12:]
    for model in apps.get_models():
        for row in model._base_manager.values():
            assert secret_part not in str(row), f"{model.__name__} stores the raw key"


# --- audit rows -------------------------------------------------------------------------------
def test_creation_first_use_from_each_address_and_revocation_are_audited(org, org_admin):
    created = api_key_create(
        name="ci", scopes=["read"], organization=org, actor=org_admin, ip_address="10.0.0.1"
    )
    row = AuditLog.objects.get(action="api_key.created")
    assert (row.organization, row.actor, row.ip_address) == (org, org_admin, "10.0.0.1")
    assert row.after["scopes"] == ["read"] and created.raw not in str(row.after)
    for ip in ("10.0.0.5", "10.0.0.5", "10.0.0.6", "10.0.0.5"):
        assert _client(created.raw, ip).get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200
    used = AuditLog.objects.filter(action="api_key.used_from_new_ip").order_by("pk")
    assert [r.ip_address for r in used] == ["10.0.0.5", "10.0.0.6"]
    assert all(r.organization == org and r.target_id == str(created.key.pk) for r in used)
    key = ApiKey.objects.get(pk=created.key.pk)
    assert key.last_used_at is not None and key.last_used_ip == "10.0.0.5"
    api_key_revoke(key=key, actor=org_admin, ip_address="10.0.0.1")
    api_key_revoke(key=key, actor=org_admin)  # again: nothing changes, nothing is written
    revoked = AuditLog.objects.get(action="api_key.revoked")
    assert revoked.actor == org_admin and revoked.after["revoked"] is True


def test_a_personal_keys_events_are_audited_in_each_organisation_of_its_user(org, other_org, member):
    Membership.objects.create(user=member, organization=other_org, role=Role.MEMBER)
    _personal(member, "read")
    assert set(
        AuditLog.objects.filter(action="api_key.created").values_list("organization__slug", flat=True)
    ) == {
        org.slug,
        other_org.slug,
    }


# --- organisation keys ------------------------------------------------------------------------
@pytest.mark.cross_org("org-api-key-list", "org-api-key-detail", "org-api-key-revoke")
def test_an_org_key_never_reaches_another_organisation(org, other_org, org_admin, other_admin, client_for):
    Membership.objects.create(user=org_admin, organization=other_org, role=Role.ADMIN)
    AgentFactory(organization=other_org)
    created = api_key_create(name="ci", scopes=["read", "chat", "admin"], organization=org, actor=org_admin)
    client = _client(created.raw)
    assert client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200
    for path in ("agents/", "settings/", "api-keys/", "members/", "conversations/"):
        assert client.get(f"/api/v1/orgs/{other_org.slug}/{path}").status_code == 404
    assert [o["slug"] for o in client.get("/api/v1/orgs/").json()["results"]] == [org.slug]
    # and the other organisation's admin neither sees nor revokes it
    foreign = client_for(other_admin)
    assert created.key.pk not in [
        k["id"] for k in foreign.get(f"/api/v1/orgs/{other_org.slug}/api-keys/").json()["results"]
    ]
    assert foreign.get(f"/api/v1/orgs/{other_org.slug}/api-keys/{created.key.pk}/").status_code == 404
    assert foreign.post(f"/api/v1/orgs/{other_org.slug}/api-keys/{created.key.pk}/revoke/").status_code == 404
    assert ApiKey.objects.get(pk=created.key.pk).revoked is False


def test_an_org_key_acts_as_its_own_service_user_with_the_role_its_scopes_give(org, org_admin):
    agent = AgentFactory(organization=org)
    chat = api_key_create(name="bot", scopes=["read", "chat"], organization=org, actor=org_admin)
    admin = api_key_create(name="ops", scopes=["read", "admin"], organization=org, actor=org_admin)
    assert Membership.objects.get(user=chat.key.user, organization=org).role == Role.MEMBER
    assert Membership.objects.get(user=admin.key.user, organization=org).role == Role.ADMIN
    assert chat.key.created_by == org_admin and chat.key.user.username.startswith("api-key-")
    assert not chat.key.user.has_usable_password() and not chat.key.user.is_staff
    response = _client(chat.raw).post(
        f"/api/v1/orgs/{org.slug}/conversations/", {"agent": agent.pk}, format="json"
    )
    assert response.status_code == 201
    from agents.models import Conversation

    assert Conversation.objects.unscoped().get(pk=response.json()["id"]).user == chat.key.user
    # a member-role key cannot administer even with a matching scope elsewhere
    assert _client(chat.raw).get(f"/api/v1/orgs/{org.slug}/members/").status_code == 403
    assert _client(admin.raw).get(f"/api/v1/orgs/{org.slug}/members/").status_code == 200


def test_revoking_an_org_key_retires_its_service_user(org, org_admin):
    created = api_key_create(name="bot", scopes=["read"], organization=org, actor=org_admin)
    api_key_revoke(key=created.key, actor=org_admin)
    service_user = ApiKey.objects.get(pk=created.key.pk).user
    assert not service_user.is_active
    assert not Membership.objects.filter(user=service_user).exists()
    assert _client(created.raw).get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 401


def test_only_owners_and_admins_manage_the_organisations_keys(org, member, client_for):
    client = client_for(member)
    assert client.get(f"/api/v1/orgs/{org.slug}/api-keys/").status_code == 403
    assert (
        client.post(f"/api/v1/orgs/{org.slug}/api-keys/", {"name": "x", "scopes": ["read"]}).status_code
        == 403
    )
    assert ApiKey.objects.filter(organization=org).count() == 0


def test_an_org_key_has_no_personal_keys(org, org_admin):
    created = api_key_create(name="bot", scopes=["read", "admin"], organization=org, actor=org_admin)
    response = _client(created.raw).post("/api/v1/api-keys/", {"name": "x", "scopes": ["chat"]})
    assert response.status_code == 403


# --- personal keys ----------------------------------------------------------------------------
def test_personal_keys_are_listed_created_and_revoked_by_their_owner_only(org, member, org_admin, client_for):
    mine = client_for(member)
    created = mine.post("/api/v1/api-keys/", {"name": "laptop", "scopes": ["read", "chat"]}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["kind"] == "personal" and body["scopes"] == ["read", "chat"] and body["state"] == "active"
    names = [k["name"] for k in mine.get("/api/v1/api-keys/").json()["results"]]
    assert "laptop" in names
    other = client_for(org_admin)
    assert "laptop" not in [k["name"] for k in other.get("/api/v1/api-keys/").json()["results"]]
    assert other.post(f"/api/v1/api-keys/{body['id']}/revoke/").status_code == 404
    assert _client(body["key"]).get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200


def test_the_schema_documents_the_key_routes(client_for, member):
    content = client_for(member).get("/api/schema/").content
    for route in (
        b"/api/v1/api-keys/",
        b"/api/v1/orgs/{org_slug}/api-keys/",
        b"/api/v1/orgs/{org_slug}/api-keys/{id}/revoke/",
    ):
        assert route in content


# --- the operator's command -------------------------------------------------------------------
def test_create_api_token_makes_a_scoped_expiring_personal_key(member, capsys):
    call_command(
        "create_api_token", member.username, "--name", "ops", "--scope", "read", "--expires-in-days", "3"
    )
    raw = capsys.readouterr().out.strip()
    credential = api_token_authenticate(raw, ip_address=None)
    assert credential is not None and credential.user == member and credential.scopes == {"read"}
    assert credential.organization is None
    assert timedelta(days=2) < credential.key.expires_at - timezone.now() <= timedelta(days=3)
    assert AuditLog.objects.filter(action="api_key.created", actor=None).exists()


def _uses(raw: str, ip: str) -> None:
    assert api_token_authenticate(raw, ip_address=ip) is not None


def test_a_key_used_again_within_a_minute_from_the_same_address_is_not_written_again(org, org_admin):
    created = api_key_create(name="ws", scopes=["chat"], organization=org, actor=org_admin)
    _uses(created.raw, "10.0.0.5")
    first = ApiKey.objects.get(pk=created.key.pk).last_used_at
    _uses(created.raw, "10.0.0.5")
    assert ApiKey.objects.get(pk=created.key.pk).last_used_at == first
    _uses(created.raw, "10.0.0.6")  # another address is stamped at once
    assert ApiKey.objects.get(pk=created.key.pk).last_used_ip == "10.0.0.6"


def test_a_key_used_a_minute_after_its_stamp_is_stamped_again(org, org_admin):
    created = api_key_create(name="ws", scopes=["chat"], organization=org, actor=org_admin)
    long_ago = timezone.now() - timedelta(seconds=61)
    ApiKey.objects.filter(pk=created.key.pk).update(last_used_at=long_ago, last_used_ip="10.0.0.5")
    _uses(created.raw, "10.0.0.5")
    assert ApiKey.objects.get(pk=created.key.pk).last_used_at > long_ago


def test_authenticating_a_key_used_a_moment_ago_costs_one_query(org, org_admin):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    created = api_key_create(name="ws", scopes=["chat"], organization=org, actor=org_admin)
    _uses(created.raw, "10.0.0.5")
    with CaptureQueriesContext(connection) as queries:
        _uses(created.raw, "10.0.0.5")
    assert len(queries) == 1  # the key's lookup; its stamp is fresh
