"""Members of an organisation for its admins' web page: invite by e-mail, invite by single sign-on
identity, change roles, remove, link a member's Feishu account. An existing account is only ever invited
(:mod:`platform_core.identity.members.invitations`): it joins when the person accepts. Role changes and
removals reuse :func:`platform_core.services.membership_save` and
:func:`~platform_core.services.membership_remove`, so the owner rules (only owners touch the owner role;
the last owner stays) and the audit rows are the same as in the admin and the API.

An invitation of an address no user has creates the user (no usable password) and a one-time
set-password link: shown once to the admin and sent with Django's e-mail backend (the page says
whether it was sent, written into the mail folder, or failed). The link is Django's
password-reset token, so it stops working once the password is set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from platform_core.identity.api_keys.keys import without_service_users
from platform_core.identity.members.invitations import member_invitation_send
from platform_core.identity.members.mail import invitation_mail_send
from platform_core.identity.members.outcomes import MemberAdded, MemberInvited, MemberNotAdded
from platform_core.models import LinkedIdentity, Membership, Organization
from platform_core.services import MembershipRefused, MembershipSaved, audit_log_write, membership_save

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["MemberAdded", "MemberInvited", "MemberNotAdded", "MemberAddOutcome"]


MemberAddOutcome = MemberAdded | MemberInvited | MemberNotAdded | MembershipRefused


def member_list_for_org(*, organization: Organization) -> QuerySet[Membership]:
    """The organisation's memberships with their users, and whether each has a Feishu account usable here."""
    feishu = LinkedIdentity.objects.filter(user=OuterRef("user_id")).exclude(open_id="")
    feishu = feishu.filter(Q(organization__isnull=True) | Q(organization=organization))
    return (
        without_service_users(Membership.objects.filter(organization=organization), path="user__")
        .select_related("user")
        .annotate(has_feishu=Exists(feishu))
        .order_by("user__username")
    )


def member_get_for_org(*, organization: Organization, membership_id: Any) -> Membership | None:
    """One membership of ``organization`` (``None`` for a missing one, another org's and an organisation
    key's service user alike: that one is managed with its key)."""
    try:
        return (
            without_service_users(Membership.objects.filter(organization=organization), path="user__")
            .select_related("user")
            .filter(pk=membership_id)
            .first()
        )
    except (ValueError, ValidationError):
        return None


def _free_username(email: str) -> str:
    User = get_user_model()
    base = email[:150]
    name, n = base, 1
    while User._default_manager.filter(username=name).exists():
        n += 1
        suffix = f"-{n}"
        name = base[: 150 - len(suffix)] + suffix
    return name


def member_invite_by_email(
    *,
    organization: Organization,
    actor: User,
    email: str,
    role: str,
    set_password_link: Callable[[str, str], str],
    invitations_url: str = "",
    ip_address: str | None = None,
) -> MemberAddOutcome:
    """Invite the user with this e-mail address (they accept at ``invitations_url``), or create one as a
    member and return its one-time set-password link.

    ``set_password_link(uidb64, token)`` builds the absolute link; once the transaction committed it is
    e-mailed to the address, and ``MemberAdded.mail`` says what became of that e-mail (issue 32).
    """
    outcome = _member_invite_by_email(
        organization=organization,
        actor=actor,
        email=email,
        role=role,
        set_password_link=set_password_link,
        invitations_url=invitations_url,
        ip_address=ip_address,
    )
    if not isinstance(outcome, MemberAdded) or not outcome.set_password_url:
        return outcome
    org_name = organization.name
    mail = invitation_mail_send(
        to=outcome.membership.user.email,
        subject=_("You are invited to %(org)s") % {"org": org_name},
        body=_(
            "You were added to %(org)s on the agent platform. Choose your password here (the link works "
            "once): %(link)s"
        )
        % {"org": org_name, "link": outcome.set_password_url},
    )
    return replace(outcome, mail=mail)


@transaction.atomic
def _member_invite_by_email(
    *,
    organization: Organization,
    actor: User,
    email: str,
    role: str,
    set_password_link: Callable[[str, str], str],
    invitations_url: str,
    ip_address: str | None,
) -> MemberAddOutcome:
    email = (email or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        return MemberNotAdded("invalid", _("Enter a valid e-mail address."))
    users = without_service_users(get_user_model()._default_manager.filter(email__iexact=email))
    found = list(users[:2])
    if len(found) > 1:
        return MemberNotAdded("ambiguous", _("Several users have this e-mail address: add them by username."))
    if found:
        user = found[0]
        if not user.is_active:
            return MemberNotAdded("invalid", _("The user with this e-mail address is deactivated."))
        return member_invitation_send(
            organization=organization,
            user=user,
            role=role,
            actor=actor,
            invitations_url=invitations_url,
            ip_address=ip_address,
        )
    user = get_user_model()._default_manager.create(username=_free_username(email.lower()), email=email)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    outcome = membership_save(
        organization=organization, user=user, role=role, actor=actor, ip_address=ip_address
    )
    if not isinstance(outcome, MembershipSaved):
        transaction.set_rollback(True)
        return outcome
    link = set_password_link(
        urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)
    )
    audit_log_write(
        organization=organization,
        actor=actor,
        action="membership.invited",
        target=outcome.membership,
        after={"user": user.get_username(), "email": email, "role": role},
        ip_address=ip_address,
    )
    return MemberAdded(outcome.membership, set_password_url=link)


def users_with_sso_identity(identifier: str) -> list[User]:
    """Active users who signed in with Feishu or an OIDC provider, named exactly by ``identifier``: a
    Feishu ``open_id``/``union_id``, a provider's account id, or (for such users only) their e-mail."""
    identifier = (identifier or "").strip()
    if not identifier:
        return []
    User = get_user_model()
    signed_in = Q(linked_identities__organization__isnull=True, linked_identities__isnull=False)
    by_account = Q(linked_identities__organization__isnull=True) & (
        Q(linked_identities__open_id=identifier)
        | Q(linked_identities__union_id=identifier)
        | Q(linked_identities__subject=identifier)
    )
    if apps.is_installed("allauth.socialaccount"):
        from allauth.socialaccount.models import SocialAccount

        signed_in |= Q(pk__in=SocialAccount.objects.values("user_id"))
        by_account |= Q(pk__in=SocialAccount.objects.filter(uid=identifier).values("user_id"))
    users = without_service_users(User._default_manager.filter(is_active=True))
    found = list(users.filter(by_account).distinct()[:2])
    if not found and "@" in identifier:
        found = list(users.filter(signed_in, email__iexact=identifier).distinct()[:2])
    return found


@transaction.atomic
def member_add_by_identity(
    *,
    organization: Organization,
    actor: User,
    identifier: str,
    role: str,
    invitations_url: str = "",
    ip_address: str | None = None,
) -> MemberAddOutcome:
    """Invite an existing user who signed in with single sign-on, named by their identity or e-mail."""
    found = users_with_sso_identity(identifier)
    if not found:
        return MemberNotAdded(
            "unknown",
            _("Nobody who signed in with Feishu or single sign-on has this account or e-mail address."),
        )
    if len(found) > 1:
        return MemberNotAdded(
            "ambiguous", _("Several users match: enter their Feishu open_id or account id.")
        )
    return member_invitation_send(
        organization=organization,
        user=found[0],
        role=role,
        actor=actor,
        invitations_url=invitations_url,
        ip_address=ip_address,
    )
