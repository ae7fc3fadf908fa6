"""The budgets' counters: reserve before a model call, settle after it, atomically (Redis when the
platform has it, else the database).

Every budget-period has three numbers: ``used`` (settled calls), ``reserved`` (the estimates of calls
under way) and ``in_flight`` (how many calls are under way). A call with estimate ``r`` in a budget of
limit ``L`` is admitted when, for EVERY budget it counts in, atomically together:

    used + reserved + r <= L                      (it fits, even if it uses all of its estimate)
    or in_flight == 0 and used + reserved < L     (nothing else is under way and something is left)

and then ``reserved += r`` and ``in_flight += 1`` in every one. Settling takes the reservation back and
adds what the call really used to ``used``.

Bound: no budget ends more than one call's usage past its limit. Calls admitted by the first rule
that use at most their estimate never take ``used`` past ``L`` (their reservations were counted while
they ran). A call admitted by the second rule runs alone in that budget: while it is under way
``in_flight >= 1`` and its reservation is counted, so no other call is admitted by the second rule, and
one by the first rule only if it fits beside the reservation; it starts below ``L``, so ``used`` ends
below ``L`` plus that call's usage.

The estimate is an upper bound of the call (see :class:`~agents.engine.metering.ModelCall`): the prompt's
UTF-8 bytes (no byte-level BPE token is shorter than a byte) plus the template's tokens per message, plus
the endpoint's output limit (else its whole context window). A cost budget reserves that many tokens at the
endpoint's highest price. A provider whose tokens are not byte-level could use more than the estimate; the
real count is settled after every call, so the next admissions see it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from agents.usage.budgets import BudgetLine, period_used
from agents.usage.models import BudgetCounter as CounterRow

KEY_PREFIX = "usage:budget"
# Counters outlive their period by a little (a month and a few days; two days), then Redis drops them.
_TTL = {"d": 2 * 86400, "m": 35 * 86400}


@dataclass(frozen=True, slots=True)
class Claim:
    """What one call asks of one budget: ``amount`` units in ``period``."""

    line: BudgetLine
    period: str
    amount: int


@dataclass(frozen=True, slots=True)
class Reserved:
    """The call is admitted; its claims are reserved until it is settled."""

    claims: tuple[Claim, ...]
    type: Literal["reserved"] = "reserved"


@dataclass(frozen=True, slots=True)
class Exceeded:
    """The call would go past ``line``: nothing was reserved."""

    line: BudgetLine
    type: Literal["exceeded"] = "exceeded"


Admission = Reserved | Exceeded


class BudgetCounter(Protocol):
    """Where the counts are kept."""

    async def reserve(self, claims: Sequence[Claim]) -> Admission: ...

    async def settle(self, claims: Sequence[Claim], used: Sequence[int]) -> list[int]:
        """Release ``claims`` and add ``used`` (per claim); returns each budget's ``used`` after."""
        ...


# -- the database --------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, line: BudgetLine) -> None:
        self.line = line


class DatabaseBudgetCounter:
    """The counts in :class:`~agents.usage.models.BudgetCounter` rows: each admission is one transaction of
    conditional UPDATEs (a row's WHERE is re-checked under its row lock), rolled back when one fails."""

    async def reserve(self, claims: Sequence[Claim]) -> Admission:
        return await sync_to_async(self.reserve_sync)(claims)

    async def settle(self, claims: Sequence[Claim], used: Sequence[int]) -> list[int]:
        return await sync_to_async(self.settle_sync)(claims, used)

    def reserve_sync(self, claims: Sequence[Claim]) -> Admission:
        ordered = sorted(claims, key=lambda c: (str(c.line.id), c.period))  # one lock order: no deadlock
        for claim in ordered:
            if not CounterRow.objects.filter(budget_id=claim.line.id, period=claim.period).exists():
                used = period_used(claim.line, claim.period)
                CounterRow.objects.get_or_create(
                    budget_id=claim.line.id, period=claim.period, defaults={"used": used}
                )
        try:
            with transaction.atomic():
                for claim in ordered:
                    fits = Q(used__lte=claim.line.limit - claim.amount - F("reserved"))
                    alone = Q(in_flight=0, used__lt=claim.line.limit - F("reserved"))
                    updated = CounterRow.objects.filter(
                        fits | alone, budget_id=claim.line.id, period=claim.period
                    ).update(reserved=F("reserved") + claim.amount, in_flight=F("in_flight") + 1)
                    if not updated:
                        raise _Refused(claim.line)
        except _Refused as refused:
            return Exceeded(refused.line)
        return Reserved(tuple(claims))

    def settle_sync(self, claims: Sequence[Claim], used: Sequence[int]) -> list[int]:
        after: list[int] = []
        with transaction.atomic():
            for claim, units in zip(claims, used, strict=True):
                rows = CounterRow.objects.filter(budget_id=claim.line.id, period=claim.period)
                rows.update(
                    used=F("used") + units,
                    reserved=F("reserved") - claim.amount,
                    in_flight=F("in_flight") - 1,
                )
                after.append(rows.values_list("used", flat=True).first() or 0)
        return after


# -- Redis ---------------------------------------------------------------------------------------

# KEYS: the budgets' hashes; ARGV: the TTL, then limit and amount per key. Returns 0 (reserved), the
# 1-based index of the budget that refused, or minus the index of a counter that does not exist yet (it is
# started from the stored rows, then the script runs again). A script runs atomically in Redis
# (https://redis.io/docs/latest/develop/programmability/eval-intro/).
_RESERVE = """
local ttl = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 0 then
    return -i
  end
end
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 * i])
  local amount = tonumber(ARGV[2 * i + 1])
  local used = tonumber(redis.call('HGET', key, 'used') or '0')
  local reserved = tonumber(redis.call('HGET', key, 'reserved') or '0')
  local inflight = tonumber(redis.call('HGET', key, 'in_flight') or '0')
  if not (used + reserved + amount <= limit or (inflight == 0 and used + reserved < limit)) then
    return i
  end
end
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'reserved', ARGV[2 * i + 1])
  redis.call('HINCRBY', key, 'in_flight', 1)
  redis.call('EXPIRE', key, ttl)
end
return 0
"""
# KEYS: the budgets' hashes; ARGV: amount reserved and units used per key. Returns each ``used`` after.
_SETTLE = """
local after = {}
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'reserved', -tonumber(ARGV[2 * i - 1]))
  redis.call('HINCRBY', key, 'in_flight', -1)
  after[i] = redis.call('HINCRBY', key, 'used', ARGV[2 * i])
end
return after
"""


def redis_key(claim: Claim) -> str:
    """The hash of a budget's period (one per budget and period)."""
    return f"{KEY_PREFIX}:{claim.line.organization_id}:{claim.line.id}:{claim.period}"


class RedisBudgetCounter:
    """The counts in Redis hashes, each admission and settlement one Lua script (atomic across every
    budget of the call), through ``redis.asyncio`` so the event loop never waits on a socket."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as redis  # the client Django's Redis cache uses

        self._redis = redis.Redis.from_url(url)
        self._reserve = self._redis.register_script(_RESERVE)
        self._settle = self._redis.register_script(_SETTLE)

    async def reserve(self, claims: Sequence[Claim]) -> Admission:
        if not claims:
            return Reserved(())
        ttl = max(_TTL[c.period[0]] for c in claims)
        args: list[int] = [ttl]
        for claim in claims:
            args += [claim.line.limit, claim.amount]
        keys = [redis_key(c) for c in claims]
        for _ in range(len(claims) + 1):
            answer = int(await self._reserve(keys=keys, args=args))
            if answer >= 0:
                break
            missing = claims[-answer - 1]
            used = await sync_to_async(period_used)(missing.line, missing.period)
            # HSETNX: of several processes starting the same counter, the first one's start stands.
            await self._redis.hsetnx(keys[-answer - 1], "used", used)
            await self._redis.expire(keys[-answer - 1], ttl)
        if answer < 0:  # pragma: no cover - every counter was started above
            raise RuntimeError("a budget counter could not be started")
        if answer:
            return Exceeded(claims[answer - 1].line)
        return Reserved(tuple(claims))

    async def settle(self, claims: Sequence[Claim], used: Sequence[int]) -> list[int]:
        if not claims:
            return []
        args: list[int] = []
        for claim, units in zip(claims, used, strict=True):
            args += [claim.amount, units]
        after = await self._settle(keys=[redis_key(c) for c in claims], args=args)
        return [int(n) for n in after]

    async def aclose(self) -> None:
        await self._redis.aclose()


_database_counter = DatabaseBudgetCounter()
# A redis.asyncio client belongs to the event loop it connected on: one per loop.
_redis_counters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, RedisBudgetCounter] = (
    weakref.WeakKeyDictionary()
)


def budget_counter() -> BudgetCounter:
    """Redis when ``REDIS_URL`` is set (every process shares the counts), else the database. Called on
    the event loop."""
    url = getattr(settings, "REDIS_URL", "") or ""
    if not url:
        return _database_counter
    loop = asyncio.get_running_loop()
    counter = _redis_counters.get(loop)
    if counter is None:
        counter = _redis_counters[loop] = RedisBudgetCounter(url)
    return counter
