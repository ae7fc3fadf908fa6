"""The admin's linked identities: an org admin sees the identities of their organisation's members only
(and, of a member shared with another organisation, not the links that organisation made by hand), links
a member's Feishu open_id by hand (audited) and cannot link a non-member."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.identity.linked_identities import identity_link_feishu_by_hand, link_feishu_identity
from platform_core.models import AuditLog, LinkedIdentity, Role
from tests.factories import PASSWORD, MembershipFactory, member_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_admin(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_an_org_admin_sees_only_identities_that_count_in_their_organisation(
    as_admin, org, other_org, other_admin
):
    lee = member_of(org, Role.APPROVER, username="lee")
    link_feishu_identity(lee, open_id="ou_lee")
    shared = member_of(org, Role.MEMBER, username="shared")
    MembershipFactory(organization=other_org, user=shared)
    identity_link_feishu_by_hand(
        organization=other_org, actor=other_admin, user=shared, open_id="ou_by_globex"
    )
    link_feishu_identity(other_admin, open_id="ou_gus")

    page = as_admin.get(reverse("admin:platform_core_linkedidentity_changelist"))

    assert page.status_code == 200
    assert [i.open_id for i in page.context["cl"].result_list] == ["ou_lee"]
    foreign = LinkedIdentity.objects.get(open_id="ou_gus")
    change = reverse("admin:platform_core_linkedidentity_change", args=[foreign.pk])
    assert as_admin.get(change).status_code in (302, 404)


def test_an_org_admin_links_a_members_feishu_account_in_the_admin(as_admin, org, org_admin, other_org):
    mia = member_of(org, Role.MEMBER, username="mia")
    outsider = member_of(other_org, Role.MEMBER, username="olaf")
    url = reverse("admin:platform_core_linkedidentity_add")

    refused = as_admin.post(url, {"organization": org.pk, "user": outsider.pk, "open_id": "ou_olaf"})
    done = as_admin.post(url, {"organization": org.pk, "user": mia.pk, "open_id": "ou_mia"})

    assert refused.status_code == 200 and "user" in refused.context["adminform"].form.errors
    assert done.status_code == 302
    identity = LinkedIdentity.objects.get()
    assert (identity.user, identity.organization, identity.open_id) == (mia, org, "ou_mia")
    assert AuditLog.objects.get(action="linked_identity.created").actor == org_admin

    delete = reverse("admin:platform_core_linkedidentity_delete", args=[identity.pk])
    assert as_admin.post(delete, {"post": "yes"}).status_code == 302
    assert not LinkedIdentity.objects.exists()
    assert AuditLog.objects.filter(action="linked_identity.deleted").count() == 1
