"""SessionContext: tells the agent, at the start of a run, who it works for, the date and what it may do."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents.engine.hooks import SessionContext, SessionStartHook
from hooks.catalog import ActionInfo

PRIORITY = 10
MAX_LISTED_ACTIONS = 60


def session_context_text(
    *,
    organization_name: str,
    organization_slug: str,
    username: str,
    today: date,
    actions: Sequence[ActionInfo],
    language: str | None = None,
) -> str:
    """The text added to the system prompt."""
    with translation.override(language):
        lines = [
            _("Session context:"),
            _("- Organisation: %(name)s (%(slug)s)") % {"name": organization_name, "slug": organization_slug},
            _("- User: %(user)s") % {"user": username},
            _("- Today's date: %(date)s (UTC)") % {"date": today.isoformat()},
        ]
        if actions:
            lines.append(_("- Actions you may use:"))
            for info in list(actions)[:MAX_LISTED_ACTIONS]:
                kind = _("writes data") if info.is_write else _("read-only")
                lines.append(f"  - {info.tool_name} ({kind})")
            if len(actions) > MAX_LISTED_ACTIONS:
                lines.append(_("  - … and %(count)d more") % {"count": len(actions) - MAX_LISTED_ACTIONS})
        else:
            lines.append(_("- You have no connector actions in this conversation."))
        return "\n".join(lines)


class SessionContextHook(SessionStartHook):
    """Adds the organisation, the user, the date and the agent's allowed actions to the system prompt."""

    name = "session_context"
    priority = PRIORITY

    def __init__(
        self,
        *,
        organization_name: str,
        organization_slug: str,
        username: str,
        actions: Sequence[ActionInfo],
        language: str | None = None,
    ) -> None:
        self.organization_name = organization_name
        self.organization_slug = organization_slug
        self.username = username
        self.actions = tuple(actions)
        self.language = language

    async def session_start(self, ctx: SessionContext) -> str | None:
        return session_context_text(
            organization_name=self.organization_name,
            organization_slug=self.organization_slug,
            username=self.username,
            today=timezone.now().date(),
            actions=self.actions,
            language=self.language,
        )
