"""Why a tool call was held for approval, stored on its request and told to people in their language.

The request stores the condition's outcome as data (``ApprovalRequest.hold_reason``) rather than a
sentence, so the inbox, the API and a Feishu card each say it in their own language:
``{"kind": "matched", "condition": "amount > 10000"}``, ``{"kind": "always"}`` (the policy has no
condition) or ``{"kind": "unjudged", "condition": …, "problem": …, "argument": …, "found": …,
"expected": …}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from hooks.conditions import Matched, Problem, Unjudged

_KINDS = {
    "null": gettext_lazy("null"),
    "bool": gettext_lazy("true or false"),
    "number": gettext_lazy("a number"),
    "decimal_text": gettext_lazy("a number written as text"),
    "date": gettext_lazy("a date"),
    "datetime": gettext_lazy("a date and time"),
    "text": gettext_lazy("text"),
    "list": gettext_lazy("a list"),
    "object": gettext_lazy("an object"),
}


def hold_reason_data(outcome: Matched | Unjudged) -> dict[str, Any]:
    """What a request stores about why its call was held."""
    if isinstance(outcome, Matched):
        return (
            {"kind": "matched", "condition": outcome.condition} if outcome.condition else {"kind": "always"}
        )
    return {
        "kind": "unjudged",
        "condition": outcome.condition,
        "problem": outcome.problem.value,
        "argument": outcome.argument,
        "found": outcome.found,
        "expected": outcome.expected,
    }


def _kind(name: Any) -> str:
    return str(_KINDS.get(str(name), name or _("a value")))


def _problem_text(data: Mapping[str, Any]) -> str:
    values = {
        "argument": data.get("argument") or _("a value"),
        "found": _kind(data.get("found")),
        "expected": _kind(data.get("expected")),
    }
    problem = data.get("problem")
    if problem == Problem.MISSING:
        return _("the call has no argument %(argument)s") % values
    if problem in (Problem.MISMATCH, Problem.DATE_AND_DATETIME):
        return _("%(argument)s is %(found)s, which cannot be compared with %(expected)s") % values
    if problem == Problem.NOT_FINITE:
        return _("%(argument)s is not a finite number") % values
    if problem == Problem.NAIVE_AND_AWARE:
        return (
            _("%(argument)s: a date and time with a time zone cannot be compared with one without") % values
        )
    if problem == Problem.NOT_A_COMPARISON:
        return _("%(argument)s is %(found)s, not a comparison that is true or false") % values
    if problem == Problem.INVALID:
        return _("the condition is not valid")
    return _("an unexpected error")


def hold_reason_text(data: Mapping[str, Any] | None) -> str:
    """Why the call was held, in the active language ("" for requests stored before reasons were)."""
    if not isinstance(data, Mapping) or not data.get("kind"):
        return ""
    kind = data["kind"]
    if kind == "always":
        return _("the policy has no condition: every call it covers needs approval")
    if kind == "matched":
        return _("condition matched: %(condition)s") % {"condition": data.get("condition", "")}
    return _("condition could not be evaluated: %(problem)s (%(condition)s)") % {
        "problem": _problem_text(data),
        "condition": data.get("condition", ""),
    }
