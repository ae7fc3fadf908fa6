"""An organisation key's service user is an identity of the key, not a person: it is managed on the API
keys page, so the Members page does not list it and a policy's approver picker does not offer it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import Membership, Role
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_key_user(org):
    admin = member_of(org, Role.ADMIN, username="ada")
    created = api_key_create(name="ERP sync", scopes=["read", "chat", "admin"], actor=admin, organization=org)
    # the key's service user holds an admin membership of the organisation
    assert Membership.objects.filter(organization=org, user=created.key.user, role=Role.ADMIN).exists()
    return admin, created.key.user


def test_the_members_page_does_not_list_an_organisation_keys_service_user(client, org, admin_key_user):
    admin, service_user = admin_key_user
    assert client.login(username=admin.username, password=PASSWORD)
    response = client.get(reverse("members-page", kwargs={"org_slug": org.slug}))
    listed = {m.user.username for m in response.context["members"]}
    assert admin.username in listed and service_user.username not in listed


def test_the_approver_picker_does_not_offer_an_organisation_keys_service_user(client, org, admin_key_user):
    admin, service_user = admin_key_user
    assert client.login(username=admin.username, password=PASSWORD)
    page = client.get(reverse("admin:hooks_approvalpolicy_add"))
    offered = {pk for pk, _label in page.context["adminform"].form.fields["approver_users"].choices}
    assert admin.pk in {getattr(pk, "value", pk) for pk in offered}
    assert service_user.pk not in {getattr(pk, "value", pk) for pk in offered}
