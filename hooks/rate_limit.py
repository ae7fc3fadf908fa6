"""RateLimit: per connector and per user call limits, counted in Django's cache (Redis in production).

Each limit counts attempts in fixed windows of ``period_seconds``: the first call of a window creates the
counter with ``add`` (expiring with the window) and every call increments it atomically with ``incr``,
so processes sharing the cache share the count. A call over any limit is blocked and the model is told
which limit and when the window ends. Which limits exist comes with the call's guard-rail configuration
(:mod:`hooks.call_config`), so a limit an admin adds counts from the next call on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.core.cache import cache
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.engine.hooks import ALLOW, Block, HookContext, PreVerdict
from hooks.call_config import CallGuardConfig
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.guard import ConnectorGuard
from hooks.models import RateLimit
from hooks.state import RunGuardState

logger = logging.getLogger(__name__)

PRIORITY = 30
KEY_PREFIX = "hooks:rate"


@dataclass(frozen=True, slots=True)
class LimitState:
    """One limit's count for the current window."""

    limit_id: int
    count: int
    max_calls: int
    retry_in: int

    @property
    def exceeded(self) -> bool:
        return self.count > self.max_calls


def counter_key(limit: RateLimit, *, user_id: int | None, window: int) -> str:
    who = f"u{user_id}" if limit.per_user else "all"
    return f"{KEY_PREFIX}:{limit.organization_id}:{limit.pk}:{who}:{window}"


def _increment(key: str, timeout: int) -> int:
    # The sync add/incr pair: Django's async cache methods implement incr as get-then-set, which is not
    # atomic; the sync incr is (a lock in the local-memory cache, INCR in Redis).
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # the counter expired between add and incr: this call starts a new one
        cache.add(key, 0, timeout=timeout)
        return cache.incr(key)


async def count_call(limit: RateLimit, *, user_id: int | None, now: float | None = None) -> LimitState:
    """Count one call against ``limit`` and return the window's count (atomic across processes)."""
    now = time.time() if now is None else now
    period = max(1, limit.period_seconds)
    window = int(now // period)
    key = counter_key(limit, user_id=user_id, window=window)
    retry_in = max(1, int((window + 1) * period - now))
    count = await sync_to_async(_increment, thread_sensitive=False)(key, period + 1)
    return LimitState(limit_id=limit.pk, count=count, max_calls=limit.max_calls, retry_in=retry_in)


def limit_message(limit: RateLimit, state: LimitState, connector_name: str, language: str | None) -> str:
    with translation.override(language):
        calls = ngettext(
            "at most %(count)d call every %(seconds)d seconds",
            "at most %(count)d calls every %(seconds)d seconds",
            limit.max_calls,
        ) % {"count": limit.max_calls, "seconds": limit.period_seconds}
        target = connector_name if limit.connector_id is not None else _("all connectors")
        scope = _("for each user") if limit.per_user else _("for everyone together")
        return _(
            "rate limit '%(name)s' reached: %(calls)s to %(target)s %(scope)s. The call was not made; "
            "it can be tried again in %(retry)d seconds."
        ) % {"name": limit.name, "calls": calls, "target": target, "scope": scope, "retry": state.retry_in}


class RateLimitHook(ConnectorGuard):
    """Blocks connector calls over the organisation's active limits (read fresh on every call)."""

    name = "rate_limit"
    priority = PRIORITY

    def __init__(
        self,
        *,
        organization_id: int | None,
        user_id: int | None,
        catalog: ActionCatalog,
        language: str | None = None,
        state: RunGuardState | None = None,
    ) -> None:
        super().__init__(organization_id=organization_id, catalog=catalog, language=language, state=state)
        self.user_id = user_id

    async def judge(self, ctx: HookContext, info: ActionInfo, config: CallGuardConfig | None) -> PreVerdict:
        for limit in config.rate_limits_for(info) if config is not None else ():
            state = await count_call(limit, user_id=self.user_id)
            if state.exceeded:
                logger.info(
                    "rate limit %s blocked %s",
                    limit.pk,
                    ctx.tool_name,
                    extra={"org_id": self.organization_id},
                )
                return Block(limit_message(limit, state, info.connector_name, self.language))
        return ALLOW
