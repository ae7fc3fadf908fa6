"""Relative times on the server-rendered pages: "just now" for the first minute, never "0 minutes ago"."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string
from django.utils import timezone, translation

from platform_core.templatetags.time_ago import ago


@pytest.mark.parametrize(
    ("seconds", "english", "chinese"),
    [(0, "just now", "刚刚"), (59, "just now", "刚刚"), (300, "5\xa0minutes ago", "5\xa0分钟前")],
)
def test_a_moment_reads_as_people_say_it(seconds, english, chinese):
    moment = timezone.now() - timedelta(seconds=seconds)
    assert ago(moment) == english
    with translation.override("zh-hans"):
        assert ago(moment) == chinese


def test_a_conversation_updated_a_moment_ago_is_listed_as_just_now():
    item = SimpleNamespace(
        pk="6f1c2a1e-0000-4000-8000-000000000001",
        title="Draft orders",
        agent=SimpleNamespace(name="Purchasing assistant"),
        updated_at=timezone.now(),
    )
    html = render_to_string(
        "agents/_conversation_item.html", {"item": item, "org": SimpleNamespace(slug="acme")}
    )
    assert "Purchasing assistant · " in html and ">just now</time>" in html
    assert "0\xa0minutes" not in html
