"""ReadOnlyGuard: while the organisation is in read-only mode, no connector call may change data."""

from __future__ import annotations

import logging

from django.utils import translation
from django.utils.translation import gettext as _

from agents.engine.hooks import HookContext, HookResult, PreToolUseHook
from hooks.catalog import ActionCatalog
from hooks.state import RunGuardState

logger = logging.getLogger(__name__)

PRIORITY = 10


def read_only_message(reason: str, language: str | None = None) -> str:
    """What the model sees for a blocked write, in the run's language."""
    with translation.override(language):
        return _("organisation is in read-only mode: %(reason)s") % {"reason": reason}


class ReadOnlyGuard(PreToolUseHook):
    """Blocks write actions and SQL that is not one plain read while read-only mode is on.

    The flag is read from the database on every call (with the rest of the call's guard-rail
    configuration, :mod:`hooks.call_config`), so switching the mode on takes effect for runs already in
    progress. Whatever the model says, only the action and the SQL itself are judged.
    """

    name = "read_only_guard"
    priority = PRIORITY

    def __init__(
        self,
        *,
        organization_id: int,
        catalog: ActionCatalog,
        language: str | None = None,
        state: RunGuardState | None = None,
    ) -> None:
        self.organization_id = organization_id
        self.catalog = catalog
        self.language = language
        self.state = state if state is not None else RunGuardState()

    async def pre_tool_use(self, ctx: HookContext) -> HookResult | None:
        info = self.catalog.get(ctx.tool_name)
        if info is None:
            return None  # not a connector call
        config = await self.state.call_config(self.organization_id, ctx.tool_call_id)
        if config is None:
            return HookResult.block(read_only_message(_("the organisation no longer exists"), self.language))
        if not config.read_only:
            return None
        why = info.write_reason(ctx.tool_args)
        if why is None:
            return None
        logger.info("read-only mode blocked %s", ctx.tool_name, extra={"org_id": self.organization_id})
        return HookResult.block(read_only_message(config.read_only_reason, self.language))
