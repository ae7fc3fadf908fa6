"""Choosing approvers as people in the admin and the API: users of the organisation by name (with whether
their Feishu account is linked), roles, and raw open_ids marked as people without a platform account."""

from __future__ import annotations

import pytest
from django.urls import reverse

from hooks.admin import audience_html
from hooks.approvers import policy_audience
from hooks.models import ApprovalPolicy
from platform_core.identity.linked_identities import link_feishu_identity
from platform_core.models import AuditLog, Role
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def lee(org):
    user = member_of(org, Role.APPROVER, username="lee", first_name="Lee", last_name="Chen")
    link_feishu_identity(user, open_id="ou_lee")
    return user


def test_the_admin_form_offers_the_organisations_approvers_by_name_and_saves_users_and_roles(
    client, org, other_org, lee
):
    admin = member_of(org, Role.ADMIN, username="ada")
    outsider = member_of(other_org, Role.APPROVER, username="olga", first_name="Olga")
    assert client.login(username=admin.username, password=PASSWORD)
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    url = reverse("admin:hooks_approvalpolicy_add")

    page = client.get(url)
    field = page.context["adminform"].form.fields["approver_users"]
    labels = {label for _pk, label in field.choices}
    assert "Lee Chen (lee) · Feishu linked" in labels and "ada" in labels
    assert not any("olga" in label for label in labels)
    html = page.content.decode()
    assert "People without a platform account (Feishu open_id)" in html and "approver roles" in html.lower()

    response = client.post(
        url,
        {
            "organization": org.pk,
            "name": "Large payments",
            "actions": [str(action.pk)],
            "writes_only": "on",
            "approver_users": [lee.pk],
            "approver_roles": ["admin"],
            "approver_open_ids_text": "ou_boss",
            "timeout_seconds": 600,
            "is_active": "on",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy = ApprovalPolicy.objects.unscoped().get()
    assert list(policy.approver_users.all()) == [lee] and policy.approver_roles == ["admin"]
    assert AuditLog.objects.get(action="approval_policy.created").after["approver_roles"] == ["admin"]

    change = client.get(reverse("admin:hooks_approvalpolicy_change", args=[policy.pk])).content.decode()
    assert "Lee Chen" in change and "holding the role Admin" in change

    refused = client.post(url, {"organization": org.pk, "name": "x", "actions": [str(action.pk)],
                                "approver_users": [outsider.pk], "timeout_seconds": 600})  # fmt: skip
    assert refused.status_code == 200 and "approver_users" in refused.context["adminform"].form.errors


def test_the_api_takes_users_and_roles_and_shows_approvers_by_name(client_for, org, other_org, lee):
    admin = member_of(org, Role.ADMIN, username="ada")
    outsider = member_of(other_org, Role.APPROVER, username="olga")
    connector = ConnectorFactory(organization=org)
    client = client_for(admin)
    url = f"/api/v1/orgs/{org.slug}/approval-policies/"

    created = client.post(
        url,
        {
            "name": "people",
            "connectors": [str(connector.pk)],
            "approver_users": [lee.pk],
            "approver_roles": ["owner", "approver", "owner"],
            "approver_open_ids": ["ou_boss"],
        },
        format="json",
    )

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["approver_roles"] == ["owner", "approver"]
    assert body["approvers"] == {
        "users": [{"id": lee.pk, "username": "lee", "name": "Lee Chen", "feishu_linked": True}],
        "roles": [{"role": "owner", "name": "Owner"}, {"role": "approver", "name": "Approver"}],
        "without_platform_account": ["ou_boss"],
    }
    for field, value in (("approver_users", [outsider.pk]), ("approver_roles", ["member"])):
        bad = client.post(
            url, {"name": f"bad-{field}", "connectors": [str(connector.pk)], field: value}, format="json"
        )
        assert bad.status_code == 400 and field in bad.json(), bad.content


def test_the_policy_list_names_approvers_in_a_fixed_number_of_queries(
    client_for, org, lee, django_assert_max_num_queries
):
    admin = member_of(org, Role.ADMIN, username="ada")
    client = client_for(admin)
    for n in range(4):
        ApprovalPolicyFactory(organization=org, name=f"p{n}", approver_users=[lee, admin])
    url = f"/api/v1/orgs/{org.slug}/approval-policies/"
    client.get(url)
    with django_assert_max_num_queries(12):
        results = client.get(url).json()["results"]
    assert [u["name"] for u in results[0]["approvers"]["users"]] == ["ada", "Lee Chen"]


def test_who_is_asked_names_who_can_decide_on_the_card_and_marks_people_without_an_account(org, lee):
    mia = member_of(org, Role.APPROVER, username="mia")  # no linked Feishu account
    channel = FeishuChannelFactory(organization=org, default_chat_id="oc_approvals")
    policy = ApprovalPolicyFactory(
        organization=org, channel=channel, approver_users=[lee, mia], approver_open_ids=["ou_boss"]
    )

    html = str(audience_html(policy_audience(policy=policy)))

    assert "these people can decide on it: Lee Chen, ou_boss (no platform account)." in html
    assert "<li>mia</li>" in html and "ou_lee" not in html
