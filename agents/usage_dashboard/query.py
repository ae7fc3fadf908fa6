"""What a dashboard request asks for: the bucket size, the date range and the grouping, parsed from query
parameters into a typed outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal, TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.models import Organization

Period = Literal["day", "week", "month"]
GroupBy = Literal["user", "agent", "model_endpoint"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")
GROUP_BYS: tuple[GroupBy, ...] = ("user", "agent", "model_endpoint")
DEFAULT_DAYS = 30
MAX_DAYS = 731


@dataclass(frozen=True, slots=True)
class DashboardQuery:
    """Rows created from ``start`` (inclusive) to ``end`` (exclusive), local midnights of ``first`` and the
    day after ``last`` in ``zone``, bucketed by ``period``; ``group_by`` picks the API's breakdown."""

    period: Period
    first: date
    last: date
    zone: ZoneInfo
    group_by: GroupBy

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time.min, tzinfo=self.zone)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time.min, tzinfo=self.zone)


@dataclass(frozen=True, slots=True)
class QueryRefused:
    """The parameters could not be read: ``errors`` maps each bad parameter to why."""

    errors: dict[str, str]


def dashboard_zone(organization: Organization | None = None) -> ZoneInfo:
    """The time zone buckets and dates are read in: the organisation's (else the site's ``TIME_ZONE``)."""
    return ZoneInfo(organization.time_zone if organization is not None else settings.TIME_ZONE)


_Choice = TypeVar("_Choice", bound=str)


def _choice(value: str, choices: tuple[_Choice, ...]) -> _Choice | None:
    """The one of ``choices`` equal to ``value``, typed as a choice; None when there is none."""
    return next((choice for choice in choices if choice == value), None)


def _date(value: str | None, name: str, errors: dict[str, str]) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        errors[name] = _("Not a date (YYYY-MM-DD): %(value)s") % {"value": value}
        return None


def dashboard_query_parse(
    params: Mapping[str, str], *, today: date | None = None, organization: Organization | None = None
) -> DashboardQuery | QueryRefused:
    """``period`` (day, week, month; default day), ``from`` and ``to`` (dates, inclusive; default the last
    30 days to today) and ``group_by`` (user, agent, model_endpoint; default user), in the time zone of
    ``organization`` (else the site's)."""
    zone = dashboard_zone(organization)
    errors: dict[str, str] = {}
    period = _choice(params.get("period") or "day", PERIODS)
    if period is None:
        errors["period"] = _("Choose day, week or month.")
    group_by = _choice(params.get("group_by") or "user", GROUP_BYS)
    if group_by is None:
        errors["group_by"] = _("Choose user, agent or model_endpoint.")
    current = today or timezone.now().astimezone(zone).date()
    last = _date(params.get("to"), "to", errors) or current
    first = _date(params.get("from"), "from", errors) or last - timedelta(days=DEFAULT_DAYS - 1)
    if not errors and first > last:
        errors["from"] = _("The start date is after the end date.")
    if not errors and (last - first).days >= MAX_DAYS:
        errors["to"] = _("Ask for at most %(days)s days.") % {"days": MAX_DAYS}
    if errors or period is None or group_by is None:
        return QueryRefused(errors=errors)
    return DashboardQuery(
        period=period,
        first=first,
        last=last,
        zone=zone,
        group_by=group_by,
    )
