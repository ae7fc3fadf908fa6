"""How a stored "Check endpoint" report reads on the endpoint's admin page, in the user's language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import models
from django.utils.dateparse import parse_datetime
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from agents.endpoint_check_services import abilities_to_change
from agents.models import ModelConfig

PROBE_LABELS: dict[str, Promise] = {
    "models": _("Model list"),
    "chat": _("Plain chat"),
    "tool_call": _("Function calling"),
    "forced_tool_choice": _("Forced tool choice"),
    "parallel_tool_calls": _("Parallel tool calls"),
    "json_mode": _("JSON mode"),
    "streaming": _("Streaming with usage"),
    "vision": _("Image input"),
    "reasoning": _("Reasoning output"),
    "embedding": _("Embedding"),
    "rerank": _("Reranking"),
}

STATUS_LABELS: dict[str, Promise] = {
    "works": _("works"),
    "refused": _("refused"),
    "not_checked": _("not checked"),
}


@dataclass(frozen=True)
class ProbeLine:
    label: str
    status: str
    status_label: str
    message: str


@dataclass(frozen=True)
class AbilityChange:
    label: str
    stored: bool | None
    found: bool


def _yes_no(value: bool | None) -> str:
    if value is None:
        return str(_("unknown"))
    return str(_("yes") if value else _("no"))


def _field_label(name: str) -> str:
    """The verbose name of the endpoint's field ``name`` (an ability: a concrete field)."""
    field = ModelConfig._meta.get_field(name)
    assert isinstance(field, models.Field)  # not a relation's reverse side nor a generic foreign key
    return str(field.verbose_name)


def check_summary(config: ModelConfig) -> dict[str, Any] | None:
    """What the admin page shows of the endpoint's last check, or None when it was never checked."""
    report = config.last_check
    if not report:
        return None
    lines = [
        ProbeLine(
            label=str(PROBE_LABELS.get(p.get("probe", ""), p.get("probe", ""))),
            status=str(p.get("status", "")),
            status_label=str(STATUS_LABELS.get(p.get("status", ""), p.get("status", ""))),
            message=str(p.get("message", "")),
        )
        for p in report.get("probes") or []
    ]
    changes = [
        AbilityChange(label=_field_label(key), stored=stored, found=found)
        for key, (stored, found) in abilities_to_change(config).items()
    ]
    return {
        "checked_at": config.last_checked_at or parse_datetime(str(report.get("checked_at", ""))),
        "elapsed": report.get("elapsed"),
        "key_verified": _yes_no(report.get("key_verified")),
        "model_found": _yes_no(report.get("model_found")),
        "refused_by_guard": report.get("refused_by_guard") or "",
        "probes": lines,
        "changes": changes,
        # Abilities are compared only when the check could decide some (not for an unreachable endpoint).
        "abilities_checked": bool(report.get("abilities")),
    }
