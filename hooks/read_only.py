"""ReadOnlyGuard: while the organisation is in read-only mode, no connector call may change data."""

from __future__ import annotations

import logging

from django.utils import translation
from django.utils.translation import gettext as _

from agents.engine.hooks import ALLOW, Block, HookContext, PreVerdict
from hooks.call_config import CallGuardConfig
from hooks.catalog import ActionInfo
from hooks.guard import ConnectorGuard

logger = logging.getLogger(__name__)

PRIORITY = 10


def read_only_message(reason: str, language: str | None = None) -> str:
    """What the model sees for a blocked write, in the run's language."""
    with translation.override(language):
        return _("organisation is in read-only mode: %(reason)s") % {"reason": reason}


class ReadOnlyGuard(ConnectorGuard):
    """Blocks write actions and SQL that is not one plain read while read-only mode is on.

    The flag is read from the database on every call (with the rest of the call's guard-rail
    configuration, :mod:`hooks.call_config`), so switching the mode on takes effect for runs already in
    progress. Whatever the model says, only the action and the SQL itself are judged.
    """

    name = "read_only_guard"
    priority = PRIORITY

    async def judge(self, ctx: HookContext, info: ActionInfo, config: CallGuardConfig | None) -> PreVerdict:
        if config is None:
            return Block(read_only_message(_("the organisation no longer exists"), self.language))
        if not config.read_only:
            return ALLOW
        why = info.write_reason(ctx.tool_args)
        if why is None:
            return ALLOW
        logger.info("read-only mode blocked %s", ctx.tool_name, extra={"org_id": self.organization_id})
        return Block(read_only_message(config.read_only_reason, self.language))
