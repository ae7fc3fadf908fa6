"""``{{ value|ago }}``: how long ago a moment was, as people say it ("just now", "5 minutes ago").

Django's ``timesince`` says "0 minutes" for the first minute; under a minute this says "just now".
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext as _

register = template.Library()

JUST_NOW_SECONDS = 60


@register.filter
def ago(value: datetime | None) -> str:
    """``value`` relative to now, in the active language; ``""`` for no value."""
    if not value:
        return ""
    if (timezone.now() - value).total_seconds() < JUST_NOW_SECONDS:
        return _("just now")
    return _("%(since)s ago") % {"since": timesince(value)}
