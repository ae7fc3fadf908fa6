"""Who may decide an approval request: never an organisation key's service user, and never the person
who asked, on any channel (the inbox, the API, a Feishu card). A requester who is the only approver a
policy names is told so, and the request goes to the owners and admins other than them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from hooks.approval import approval_approvers, approval_event_data
from hooks.approvers import policy_approver_users
from hooks.models import ApprovalRequest
from hooks.services import approval_request_create
from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import LinkedIdentity, Membership, Role
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory
from tests.hooks.wsgi_client import WsgiApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(org):
    """ada (admin), oscar (owner), april (approver), mia (member) and ci-admin, an admin-scoped org key."""
    ada = member_of(org, Role.ADMIN, username="ada")
    oscar = member_of(org, Role.OWNER, username="oscar")
    april = member_of(org, Role.APPROVER, username="april")
    mia = member_of(org, Role.MEMBER, username="mia")
    key = api_key_create(name="ci-admin", scopes=["read", "chat", "admin"], actor=ada, organization=org)
    return {"ada": ada, "oscar": oscar, "april": april, "mia": mia, "ci": key.key.user, "ci_raw": key.raw}


@pytest.fixture
def action(org):
    return ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")


def _request(org, policy, requester, capture) -> ApprovalRequest:
    with capture(execute=True):
        approval = approval_request_create(
            organization_id=org.pk,
            policy=policy,
            tool_name="erp__create_payment",
            arguments={"amount": 1},
            requested_by_id=requester.pk if requester is not None else None,
        )
    approval.refresh_from_db()
    return approval


def _names(approval) -> set[str]:
    return set(approval.approver_users.values_list("username", flat=True))


def _assert_click_refused(fake_feishu, wsgi, channel, approval, open_id: str) -> None:
    """A signed click of ``open_id`` on ``channel``'s card is answered with an error and decides nothing."""
    status, reply = fake_feishu.click(
        f"http://testserver/integrations/feishu/{channel.pk}/callback/",
        client=wsgi,
        approval_id=str(approval.pk),
        operator_open_id=open_id,
    )
    assert status == 200 and reply["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"


def _decide(wsgi, org, approval, headers):
    return wsgi.post(
        f"/api/v1/orgs/{org.slug}/approvals/{approval.pk}/decide/",
        json={"decision": "approve"},
        headers=headers,
    )


# --- service users are never approvers -------------------------------------------------------------
def test_a_policy_that_names_nobody_never_asks_an_org_keys_service_user(
    org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    assert _names(approval) == {"ada", "oscar", "april"}
    assert "ci-admin" not in approval_approvers(approval)


def test_a_policy_naming_the_admin_role_never_asks_an_org_keys_service_user(org, people, action):
    policy = ApprovalPolicyFactory(
        organization=org, actions=[action], approver_open_ids=[], approver_roles=[Role.ADMIN]
    )
    assert {u.username for u in policy_approver_users(policy=policy)} == {"ada"}


def test_a_service_user_listed_on_a_policy_in_the_database_is_still_not_asked(
    org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(
        organization=org, actions=[action], approver_users=[people["ci"], people["ada"]]
    )
    approval = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    assert _names(approval) == {"ada"}


def test_a_service_user_cannot_be_chosen_as_a_policys_approver_over_the_api(wsgi, org, people, action):
    policy = ApprovalPolicyFactory(organization=org, actions=[action])
    response = WsgiApi(wsgi, people["ada"]).patch(
        f"/api/v1/orgs/{org.slug}/approval-policies/{policy.pk}/",
        {"approver_users": [people["ci"].pk]},
    )
    assert response.status_code == 400 and "approver_users" in response.json()
    assert not policy.approver_users.exists()


def test_a_service_user_never_decides_even_a_request_that_names_it_or_names_nobody(
    wsgi, org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    named = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    named.approver_users.add(people["ci"])  # as a request made before the rule would be
    nobody = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    nobody.approver_users.clear()  # a request that names nobody: owners and admins decide
    headers = {"Authorization": f"Bearer {people['ci_raw']}"}
    for approval in (named, nobody):
        assert _decide(wsgi, org, approval, headers).status_code == 403
        approval.refresh_from_db()
        assert approval.status == "pending"


# --- the requester never decides their own request ---------------------------------------------------
def test_a_requester_holding_the_approver_role_is_not_among_the_deciders_of_their_request(
    org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["april"], django_capture_on_commit_callbacks)
    assert _names(approval) == {"ada", "oscar"}
    data = approval_event_data(approval, "call-1", approval_approvers(approval), "en")
    assert data["approvers"] == ["ada", "oscar"]
    assert "someone else must decide" in data["note"]


def test_a_requester_never_decides_their_own_request_in_the_api(
    wsgi, org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["ada"], django_capture_on_commit_callbacks)
    approval.approver_users.add(people["ada"])  # even when a request names them
    path = f"/api/v1/orgs/{org.slug}/approvals/{approval.pk}/decide/"
    refused = WsgiApi(wsgi, people["ada"]).post(path, {"decision": "approve"})
    assert refused.status_code == 403 and "You asked for this call" in refused.text
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert WsgiApi(wsgi, people["oscar"]).post(path, {"decision": "approve"}).status_code == 200


def test_a_requester_never_decides_their_own_request_in_the_inbox(
    client, org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["ada"], django_capture_on_commit_callbacks)
    approval.approver_users.add(people["ada"])
    kwargs = {"org_slug": org.slug, "approval_id": approval.pk}
    assert client.login(username="ada", password=PASSWORD)
    page = client.get(reverse("approvals-inbox-detail", kwargs=kwargs))
    assert page.context["can_decide"] is False
    assert "someone else must decide" in page.content.decode()
    posted = client.post(reverse("approvals-inbox-decide", kwargs=kwargs), {"decision": "approve"})
    assert posted.status_code == 403
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert client.login(username="oscar", password=PASSWORD)
    assert client.get(reverse("approvals-inbox-detail", kwargs=kwargs)).context["can_decide"] is True


def test_a_requester_never_decides_their_own_request_by_feishu_card(
    fake_feishu, wsgi, org, people, action, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    LinkedIdentity.objects.create(
        user=people["april"], provider="feishu", subject="ou_april", open_id="ou_april"
    )
    # april is listed by user and by her Feishu open_id: neither lets her decide what she asked for
    policy = ApprovalPolicyFactory(
        organization=org,
        actions=[action],
        channel=channel,
        approver_users=[people["april"], people["ada"]],
        approver_open_ids=["ou_april"],
    )
    approval = _request(org, policy, people["april"], django_capture_on_commit_callbacks)
    approval.approver_users.add(people["april"])
    _assert_click_refused(fake_feishu, wsgi, channel, approval, "ou_april")


def test_a_service_user_never_decides_by_feishu_card(
    fake_feishu, wsgi, org, people, action, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    LinkedIdentity.objects.create(user=people["ci"], provider="feishu", subject="ou_ci", open_id="ou_ci")
    policy = ApprovalPolicyFactory(organization=org, actions=[action], channel=channel, approver_open_ids=[])
    approval = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    approval.approver_users.add(people["ci"])
    _assert_click_refused(fake_feishu, wsgi, channel, approval, "ou_ci")


def test_a_requester_who_is_the_only_listed_approver_is_told_owners_and_admins_decide(
    org, people, action, django_capture_on_commit_callbacks
):
    policy = ApprovalPolicyFactory(
        organization=org, actions=[action], approver_users=[people["april"]], approver_open_ids=[]
    )
    approval = _request(org, policy, people["april"], django_capture_on_commit_callbacks)
    assert _names(approval) == {"ada", "oscar"}
    data = approval_event_data(approval, "call-1", approval_approvers(approval), "en")
    assert "only approver" in data["note"] and "owner or admin other than you" in data["note"]


def test_a_sole_owner_who_asks_is_told_nobody_else_can_decide_yet(
    other_org, action, django_capture_on_commit_callbacks
):
    gus = member_of(other_org, Role.OWNER, username="gus")
    other_action = ConnectorActionFactory(connector=ConnectorFactory(organization=other_org), method="POST")
    policy = ApprovalPolicyFactory(organization=other_org, actions=[other_action], approver_open_ids=[])
    approval = _request(other_org, policy, gus, django_capture_on_commit_callbacks)
    assert _names(approval) == set()
    data = approval_event_data(approval, "call-1", approval_approvers(approval), "en")
    assert data["approvers"] == [] and "no other owner or admin" in data["note"]


def test_a_member_who_asks_sees_no_note(org, people, action, django_capture_on_commit_callbacks):
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    assert approval_event_data(approval, "call-1", approval_approvers(approval), "en")["note"] == ""


def test_another_organisations_service_user_made_admin_here_is_never_asked(
    org, other_org, people, action, django_capture_on_commit_callbacks
):
    gus = member_of(other_org, Role.ADMIN, username="gus")
    foreign = api_key_create(name="globex-ci", scopes=["admin"], actor=gus, organization=other_org)
    Membership.all_objects.create(user=foreign.key.user, organization=org, role=Role.ADMIN)
    policy = ApprovalPolicyFactory(organization=org, actions=[action], approver_open_ids=[])
    approval = _request(org, policy, people["mia"], django_capture_on_commit_callbacks)
    assert _names(approval) == {"ada", "oscar", "april"}
