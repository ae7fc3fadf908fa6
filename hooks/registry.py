"""The built-in guard rails of every run, in a fixed priority order (lower runs first):

- before a tool call: ReadOnlyGuard (10), ApprovalGate (20), RateLimit (30), then the audit log's
  CallRecorder (1000), which records the call before it runs or blocks it;
- after it: AuditLog (10, the one writer of call logs, blocked calls included), TruncateResult (20);
- at the start of a run: SessionContext (10).

``agents.runtime.hooks_for`` builds every run's hooks with :func:`guard_rail_hooks`. The read-only guard, the
approval gate and the audit log always run; an agent's :class:`~hooks.models.AgentHookSettings` may turn
off rate limits, truncation and the session context, and set the truncation size.

What the guard rails need of the run is typed by :class:`GuardRailSource` (its event sink included), and
what they take over from the run's tools is declared on the :class:`GuardRails` they come as.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from django.utils import translation

from agents.engine.hooks import PostToolUseHook, PreToolUseHook, SessionStartHook
from agents.engine.run_writes import RunWrites
from connectors.selectors import RunActionsSource, run_connector_actions
from hooks.approval import ApprovalGate
from hooks.audit import AuditHook
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.conf import DEFAULT_MAX_OBSERVATION_CHARS
from hooks.rate_limit import RateLimitHook
from hooks.read_only import ReadOnlyGuard
from hooks.selectors import hook_settings_for_agent
from hooks.session_context import SessionContextHook
from hooks.state import RunGuardState
from hooks.truncate import TruncateResult
from platform_core.config_cache import run_config_cached
from platform_core.models import Organization


class GuardRailSource(RunActionsSource, Protocol):
    """What the guard rails need of a run (``agents.runtime.RunBlueprint`` has it): who is running, its
    connectors, its organisation's name (``""``: read it), where its events go (``emit(channel, data) ->
    seq``) and the writes that ride its event batches (``writes``, its event sink; ``None``: the audit log
    writes its rows itself)."""

    @property
    def organization_name(self) -> str: ...
    @property
    def emit(self) -> Callable[[str, dict[str, Any]], int | None] | None: ...
    @property
    def writes(self) -> RunWrites | None: ...


Hook = PreToolUseHook | PostToolUseHook | SessionStartHook


@dataclass(frozen=True, slots=True)
class GuardRails:
    """The guard rails of one run: its hooks, in registration order, and what they take over from its
    tools.

    ``writes_call_logs``: the audit hook writes the one call-log row of every connector call, so the run's
    connector tools leave that to it (``connectors.tools.connector_tools_for_run`` builds them so).
    """

    hooks: tuple[Hook, ...]
    writes_call_logs: bool = True


def guard_rail_hooks(blueprint: GuardRailSource) -> GuardRails:
    """The guard rails of one run (sync: reads the agent's settings and the run's connector actions)."""
    language = translation.get_language()
    run = blueprint.context
    org_id = run.org_id
    catalog = ActionCatalog(ActionInfo.from_action(a) for a in run_connector_actions(blueprint))
    settings = run_config_cached(
        blueprint,
        "hook_settings",
        lambda: hook_settings_for_agent(organization_id=org_id, agent_id=blueprint.agent_id),
    )
    state = RunGuardState()
    audit = AuditHook(
        context=run,
        catalog=catalog,
        state=state,
        language=language,
        writes=blueprint.writes,
    )
    hooks: list[Hook] = [
        ReadOnlyGuard(organization_id=org_id, catalog=catalog, language=language, state=state),
        ApprovalGate(
            facts=run, catalog=catalog, state=state, audit=audit, emit=blueprint.emit, language=language
        ),
        audit,
        audit.recorder,  # the last pre-hook: records the call it lets run, or blocks it
    ]
    if settings is None or settings.rate_limits_enabled:
        hooks.append(
            RateLimitHook(
                organization_id=org_id,
                user_id=run.user_id,
                catalog=catalog,
                language=language,
                state=state,
            )
        )
    if settings is None or settings.truncate_enabled:
        limit = settings.max_observation_chars if settings is not None else DEFAULT_MAX_OBSERVATION_CHARS
        hooks.append(TruncateResult(limit=limit, language=language))
    if settings is None or settings.session_context_enabled:
        org_name = blueprint.organization_name or _organization_name(org_id)
        hooks.append(
            SessionContextHook(
                organization_name=org_name,
                organization_slug=run.org_slug,
                username=run.username,
                actions=list(catalog),
                language=language,
            )
        )
    return GuardRails(hooks=tuple(hooks), writes_call_logs=True)


def _organization_name(org_id: int | None) -> str:
    """The organisation's name as stored (``""``: none, or the run names no organisation)."""
    if org_id is None:
        return ""
    return Organization.objects.filter(pk=org_id).values_list("name", flat=True).first() or ""
