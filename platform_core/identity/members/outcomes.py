"""The typed outcomes of adding people to an organisation (the Members page, the API, the admin)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from platform_core.identity.members.mail import MailDelivery
from platform_core.models import Membership, MembershipInvitation


@dataclass(frozen=True, slots=True)
class MemberAdded:
    """``user`` joined the organisation; ``set_password_url`` is set when the user was created for it,
    and ``mail`` then says what became of the e-mail that carries it."""

    membership: Membership
    set_password_url: str = ""
    mail: MailDelivery | None = None
    type: Literal["added"] = "added"


@dataclass(frozen=True, slots=True)
class MemberInvited:
    """An existing account was invited: it joins only when the person accepts (issue 31)."""

    invitation: MembershipInvitation
    type: Literal["invited"] = "invited"


@dataclass(frozen=True, slots=True)
class MemberNotAdded:
    """Why nobody was added: ``unknown`` identity, ``ambiguous`` e-mail, ``already_member``, ``invalid``,
    or ``service_user`` (an organisation API key's user is never a member elsewhere)."""

    code: Literal["unknown", "ambiguous", "already_member", "invalid", "service_user"]
    message: str
    type: Literal["not_added"] = "not_added"


@dataclass(frozen=True, slots=True)
class InvitationAccepted:
    """The person accepted: ``membership`` is theirs now."""

    membership: Membership
    type: Literal["accepted"] = "accepted"


@dataclass(frozen=True, slots=True)
class InvitationGone:
    """The invitation cannot be used: expired, or the person is a member already (it is removed then)."""

    message: str
    type: Literal["gone"] = "gone"
