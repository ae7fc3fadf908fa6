"""Keeping, changing and deleting memories: checked text, one row per text, a cap per person, audit rows
without the text, and the retention sweep."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.memory import limits
from agents.memory.models import Memory
from agents.memory.retention import memories_sweep
from agents.memory.services import MemoryRefused, MemorySaved, memory_create, memory_update
from agents.memory.tasks import sweep_memories
from platform_core.models import AuditLog, Role
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db


def test_empty_or_overlong_text_is_refused_and_nothing_is_kept():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)

    empty = memory_create(organization_id=org.pk, user_id=person.pk, text="  ")
    long = memory_create(organization_id=org.pk, user_id=person.pk, text="x" * (limits.TEXT_MAX_CHARS + 1))

    assert isinstance(empty, MemoryRefused) and isinstance(long, MemoryRefused)
    assert "at most 500 characters" in long.reason
    assert not Memory.objects.for_org(org).exists()


def test_the_same_text_twice_is_one_memory():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)

    first = memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers tables.")
    again = memory_create(organization_id=org.pk, user_id=person.pk, text=" Prefers tables. ")

    assert isinstance(first, MemorySaved) and first.created
    assert isinstance(again, MemorySaved) and not again.created and again.memory.pk == first.memory.pk
    assert AuditLog.objects.filter(organization=org, action="memory.created").count() == 1


def test_past_the_cap_a_person_keeps_no_more(monkeypatch):
    monkeypatch.setattr("agents.memory.services.MAX_MEMORIES_PER_USER", 2)
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    for text in ("One.", "Two."):
        memory_create(organization_id=org.pk, user_id=person.pk, text=text)

    refused = memory_create(organization_id=org.pk, user_id=person.pk, text="Three.")

    assert isinstance(refused, MemoryRefused) and "delete some" in refused.reason
    assert Memory.objects.for_org(org).count() == 2


def test_a_change_is_audited_without_either_text():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    saved = memory_create(organization_id=org.pk, user_id=person.pk, text="Lives in Suzhou.")
    assert isinstance(saved, MemorySaved)

    changed = memory_update(memory=saved.memory, text="Lives in Wuxi.", actor=person)

    assert isinstance(changed, MemorySaved)
    saved.memory.refresh_from_db()
    assert saved.memory.text == "Lives in Wuxi." and "wuxi" in saved.memory.terms
    row = AuditLog.objects.get(organization=org, action="memory.updated")
    assert "Suzhou" not in str(row.before) and "Wuxi" not in str(row.after)
    assert (row.before["length"], row.after["length"]) == (16, 14)


def test_retention_deletes_what_was_last_changed_before_it_and_keeps_the_rest():
    org, keeps_all = OrganizationFactory(memory_retention_days=30), OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    other = member_of(keeps_all, Role.MEMBER)
    old = memory_create(organization_id=org.pk, user_id=person.pk, text="Old fact.")
    memory_create(organization_id=org.pk, user_id=person.pk, text="New fact.")
    kept_forever = memory_create(organization_id=keeps_all.pk, user_id=other.pk, text="Old elsewhere.")
    assert isinstance(old, MemorySaved) and isinstance(kept_forever, MemorySaved)
    long_ago = timezone.now() - timedelta(days=31)
    Memory.objects.unscoped().filter(pk__in=[old.memory.pk, kept_forever.memory.pk]).update(
        updated_at=long_ago
    )

    assert sweep_memories() == {"expired": 1}
    assert memories_sweep() == 0

    assert list(Memory.objects.for_org(org).values_list("text", flat=True)) == ["New fact."]
    assert Memory.objects.for_org(keeps_all).count() == 1
    row = AuditLog.objects.get(organization=org, action="memory.deleted")
    assert row.actor is None and row.before["reason"] == "retention" and "Old fact" not in str(row.before)
