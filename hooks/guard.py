"""ConnectorGuard: the part every connector guard rail shares before it judges a call.

A guard looks at connector calls only: anything else is allowed at once. For a connector call it reads
the call's guard-rail configuration (:mod:`hooks.call_config`, once per call for every guard) and hands
the action and that configuration (``None`` when the organisation no longer exists) to :meth:`judge`.
"""

from __future__ import annotations

from agents.engine.hooks import ALLOW, HookContext, PreToolUseHook, PreVerdict
from hooks.call_config import CallGuardConfig
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.state import RunGuardState


class ConnectorGuard(PreToolUseHook):
    """A pre-tool-use guard rail on the connector calls of one organisation (see the module docstring)."""

    def __init__(
        self,
        *,
        organization_id: int | None,
        catalog: ActionCatalog,
        language: str | None = None,
        state: RunGuardState | None = None,
    ) -> None:
        self.organization_id = organization_id
        self.catalog = catalog
        self.language = language
        self.state = state if state is not None else RunGuardState()

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        info = self.catalog.get(ctx.tool_name)
        if info is None:
            return ALLOW  # not a connector call
        config = await self.state.call_config(self.organization_id, ctx.tool_call_id, info.connector_id)
        return await self.judge(ctx, info, config)

    async def judge(self, ctx: HookContext, info: ActionInfo, config: CallGuardConfig | None) -> PreVerdict:
        """The verdict on one connector call."""
        raise NotImplementedError


__all__ = ["ConnectorGuard"]
