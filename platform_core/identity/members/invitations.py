"""Invitations of existing accounts (issue 31): an organisation's owners and admins invite a person who
already has an account; the person accepts (or declines) while signed in, and only then is a member.

Adding someone's account to an organisation would otherwise put them under its rules without their
consent: its password sign-in switch would reach their sign-in everywhere. An account created for the
organisation (an invitation of a new e-mail address) needs no acceptance: it is the organisation's own.
Every step is audited in the organisation's log (``membership.invitation_*``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.identity.members.mail import invitation_mail_send
from platform_core.identity.members.outcomes import (
    InvitationAccepted,
    InvitationGone,
    MemberInvited,
    MemberNotAdded,
)
from platform_core.models import Membership, MembershipInvitation, Organization, Role
from platform_core.services import (
    MembershipRefused,
    audit_log_write,
    membership_refusal,
    membership_save,
    user_is_service_user,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

INVITATION_DAYS = 14


def _state(invitation: MembershipInvitation) -> dict[str, Any]:
    return {
        "user": invitation.user.get_username(),
        "role": invitation.role,
        "expires_at": invitation.expires_at.isoformat(),
    }


def member_invitation_problem(
    *, organization: Organization, user: User, role: str, actor: User | None
) -> MemberNotAdded | MembershipRefused | None:
    """Why ``actor`` may not invite ``user`` into ``organization`` with ``role`` (``None``: they may)."""
    if user_is_service_user(user):
        return MemberNotAdded(
            "service_user",
            _("This is an organisation API key's user: it cannot be a member of any organisation."),
        )
    if not user.is_active:
        return MemberNotAdded("invalid", _("This user is deactivated."))
    if Membership.objects.filter(organization=organization, user=user).exists():
        return MemberNotAdded("already_member", _("This user is already a member of the organisation."))
    return membership_refusal(organization=organization, user=user, role=role, actor=actor)


@transaction.atomic
def member_invitation_send(
    *,
    organization: Organization,
    user: User,
    role: str,
    actor: User | None,
    invitations_url: str = "",
    ip_address: str | None = None,
) -> MemberInvited | MemberNotAdded | MembershipRefused:
    """Invite an existing account, audited; inviting again replaces the role and the expiry. The person
    is told by e-mail (when they have an address and ``invitations_url`` is given) once it commits."""
    if role not in Role.values:
        raise ValidationError({"role": _("Unknown role: %(role)s") % {"role": role}})
    problem = member_invitation_problem(organization=organization, user=user, role=role, actor=actor)
    if problem is not None:
        return problem
    invitation, _created = MembershipInvitation.objects.update_or_create(
        organization=organization,
        user=user,
        defaults={
            "role": role,
            "invited_by": actor if actor is not None and actor.is_authenticated else None,
            "expires_at": timezone.now() + timedelta(days=INVITATION_DAYS),
        },
    )
    audit_log_write(
        organization=organization,
        actor=actor,
        action="membership.invitation_sent",
        target=invitation,
        after=_state(invitation),
        ip_address=ip_address,
    )
    email = getattr(user, "email", "") or ""
    if email and invitations_url:
        org_name, role_label = organization.name, str(Role(role).label)
        transaction.on_commit(
            lambda: _send_invitation(email=email, org_name=org_name, role=role_label, link=invitations_url)
        )
    return MemberInvited(invitation)


def _send_invitation(*, email: str, org_name: str, role: str, link: str) -> None:
    subject = _("You are invited to %(org)s") % {"org": org_name}
    body = _(
        "You are invited to join %(org)s as %(role)s on the agent platform. Sign in and accept or "
        "decline the invitation here: %(link)s"
    ) % {"org": org_name, "role": role, "link": link}
    # A failure is one warning line; the invitation stands: the person also sees it on the home page.
    invitation_mail_send(to=email, subject=subject, body=body)


def member_invitation_list_for_user(*, user: User) -> QuerySet[MembershipInvitation]:
    """``user``'s own invitations that can still be accepted, oldest first."""
    if not user.is_authenticated:
        return MembershipInvitation.objects.none()
    return (
        # A person's invitations come from any organisation: they are theirs to accept or decline.
        MembershipInvitation.objects.unscoped()
        .filter(user=user, expires_at__gt=timezone.now())
        .select_related("organization", "invited_by")
        .order_by("created_at", "pk")
    )


def member_invitation_get_for_user(*, user: User, invitation_id: Any) -> MembershipInvitation | None:
    """One of ``user``'s own invitations (``None`` for anyone else's and a missing one alike)."""
    if not user.is_authenticated:
        return None
    try:
        return MembershipInvitation.objects.unscoped().filter(user=user, pk=invitation_id).first()
    except (ValueError, ValidationError):
        return None


def member_invitation_list_for_org(*, organization: Organization) -> QuerySet[MembershipInvitation]:
    """The organisation's pending invitations (expired ones too, marked by ``expired``)."""
    return (
        MembershipInvitation.objects.for_org(organization)
        .select_related("user", "invited_by")
        .order_by("user__username")
    )


def member_invitation_get_for_org(
    *, organization: Organization, invitation_id: Any
) -> MembershipInvitation | None:
    """One invitation of ``organization`` (``None`` for a missing one and another org's alike)."""
    try:
        return MembershipInvitation.objects.for_org(organization).filter(pk=invitation_id).first()
    except (ValueError, ValidationError):
        return None


@transaction.atomic
def member_invitation_accept(
    *, invitation: MembershipInvitation, user: User, ip_address: str | None = None
) -> InvitationAccepted | InvitationGone | MembershipRefused:
    """``user`` accepts their own invitation: they become a member with its role, judged by the
    inviter's rights now (an owner invitation from someone no longer an owner is refused), audited."""
    locked = (
        # Only the invitation's row is locked: PostgreSQL locks no row of an outer join (invited_by is
        # nullable), and the organisation and inviter are only read.
        MembershipInvitation.objects.for_org(invitation.organization_id)
        .select_for_update(of=("self",))
        .select_related("organization", "invited_by")
        .filter(pk=invitation.pk, user=user)
        .first()
    )
    if locked is None or locked.expired:
        return InvitationGone(_("This invitation has expired or was withdrawn."))
    organization = locked.organization
    if Membership.objects.filter(organization=organization, user=user).exists():
        locked.delete()
        return InvitationGone(_("You are already a member of this organisation."))
    outcome = membership_save(
        organization=organization,
        user=user,
        role=locked.role,
        actor=user,
        ip_address=ip_address,
        authorised_by=locked.invited_by or user,
    )
    if isinstance(outcome, MembershipRefused):
        return outcome
    _close(
        locked,
        actor=user,
        action="membership.invitation_accepted",
        target=outcome.membership,
        ip_address=ip_address,
    )
    return InvitationAccepted(outcome.membership)


@transaction.atomic
def member_invitation_decline(
    *, invitation: MembershipInvitation, user: User, ip_address: str | None = None
) -> None:
    """``user`` declines their own invitation: it is removed, audited."""
    if invitation.user_id != user.pk:
        raise ValueError("only the invited person declines an invitation")
    _close(invitation, actor=user, action="membership.invitation_declined", ip_address=ip_address)


@transaction.atomic
def member_invitation_cancel(
    *, invitation: MembershipInvitation, actor: User, ip_address: str | None = None
) -> None:
    """An owner or admin of the invitation's organisation withdraws it, audited."""
    _close(invitation, actor=actor, action="membership.invitation_cancelled", ip_address=ip_address)


def _close(
    invitation: MembershipInvitation,
    *,
    actor: User,
    action: str,
    ip_address: str | None,
    target: Model | None = None,
) -> None:
    """Remove ``invitation``, audited as ``action`` on ``target`` (the invitation itself by default) with
    the invitation's state before."""
    audit_log_write(
        organization=invitation.organization,
        actor=actor,
        action=action,
        target=target or invitation,
        before=_state(invitation),
        ip_address=ip_address,
    )
    invitation.delete()
