"""What the two ways of taking a connector's actions from a source share (an OpenAPI import, an MCP tool
sync): the report, retiring the actions the source no longer has, and the audit row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from connectors.models import Connector, ConnectorAction
from platform_core.services import audit_log_write

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did, by action name. ``skipped`` holds ``(location, reason)`` pairs (the location
    of an operation in the document, or the name of an MCP tool)."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "changed": list(self.changed),
            "removed": list(self.removed),
            "unchanged": list(self.unchanged),
            "skipped": [{"location": loc, "reason": reason} for loc, reason in self.skipped],
        }


def actions_retire(
    actions: Iterable[ConnectorAction], *, source: str, still_offered: Callable[[ConnectorAction], bool]
) -> tuple[str, ...]:
    """Deactivate the actions taken from ``source`` that it no longer offers, and name them (sorted).

    They are kept, not deleted, so their call logs keep the link and an admin's edits survive if the
    source offers them again; an action retired before is left as it is."""
    now = timezone.now()
    retired: list[str] = []
    for action in actions:
        if action.source != source or action.removed_by_import_at is not None or still_offered(action):
            continue
        action.is_active = False
        action.removed_by_import_at = now
        action.save(update_fields=["is_active", "removed_by_import_at", "updated_at"])
        retired.append(action.name)
    return tuple(sorted(retired))


def import_audit_write(
    *, connector: Connector, actor: User | None, action: str, report: ImportReport, ip_address: str | None
) -> None:
    """The import's audit row: its report, without the unchanged actions."""
    audit_log_write(
        organization=connector.organization,
        actor=actor,
        action=action,
        target=connector,
        after={k: v for k, v in report.as_dict().items() if k != "unchanged"},
        ip_address=ip_address,
    )
