"""Approval conditions over the values real APIs send (issue #15): decimal strings compare as numbers,
exactly (``Decimal``, never float); ISO dates and date-times compare as dates; anything that cannot be
compared requires approval and says why. Each corpus is a list: add to it when a new case is found."""

from __future__ import annotations

import pytest

from hooks.conditions import (
    Matched,
    NotMatched,
    Problem,
    Unjudged,
    condition_requires_approval,
    evaluate_condition,
)

# (condition, arguments, whether approval is required)
DECIDED = [
    # decimal strings, as payment APIs send them, against number literals
    ("amount > 10000", {"amount": "50.00"}, False),
    ("amount > 10000", {"amount": "18600.00"}, True),
    ("amount > 10000", {"amount": "10000.00"}, False),
    ("amount > 10000", {"amount": "10000.01"}, True),
    ("amount >= 10000", {"amount": "10000.00"}, True),
    ("amount == 10000", {"amount": "10000.000"}, True),
    ("amount != 0", {"amount": "0"}, False),
    ("amount < 0", {"amount": "-0.01"}, True),
    ("amount > 0.1", {"amount": "0.10"}, False),  # exact: 0.1 is the decimal it is written as
    ("amount == 0.3", {"amount": "0.30"}, True),
    ("amount > 99999999999999999999", {"amount": "100000000000000000000.00"}, True),  # beyond float
    ("amount > 99999999999999999999", {"amount": "99999999999999999999.00"}, False),
    ("amount in [100, 200]", {"amount": "200.00"}, True),
    ("amount not in [100, 200]", {"amount": "150"}, True),
    ("10000 < amount", {"amount": "10000.5"}, True),
    ("0 < amount <= 10000", {"amount": "10000.00"}, True),
    ("order.total > 500", {"order": {"total": "499.99"}}, False),
    ('amount > 10000 and currency == "CNY"', {"amount": "18600.00", "currency": "CNY"}, True),
    ("paid < amount", {"paid": "99.5", "amount": "100"}, True),  # two decimal texts: numbers
    ('amount == "50"', {"amount": 50}, True),
    # JSON numbers
    ("amount > 10000", {"amount": 10000}, False),
    ("amount > 10000", {"amount": 10001}, True),
    ("amount > 10000", {"amount": 10000.01}, True),
    ("amount == 0.3", {"amount": 0.3}, True),
    ("amount > 1e3", {"amount": 1000.5}, True),
    ("amount >= -5", {"amount": -5}, True),
    # booleans stay booleans
    ("urgent == true", {"urgent": True}, True),
    ("urgent == false", {"urgent": True}, False),
    # ISO dates against date literals
    ('due_date < "2027-01-01"', {"due_date": "2026-12-01"}, True),
    ('due_date < "2027-01-01"', {"due_date": "2027-01-01"}, False),
    ('due_date >= "2026-12-01"', {"due_date": "2026-12-01"}, True),
    ('due_date == "2026-12-01"', {"due_date": "2026-12-01"}, True),
    ('due_date in ["2026-12-01", "2026-12-24"]', {"due_date": "2026-12-24"}, True),
    # ISO date-times with time zones compare as instants
    ('paid_at > "2026-12-01T10:00:00+08:00"', {"paid_at": "2026-12-01T02:30:00Z"}, True),
    ('paid_at > "2026-12-01T10:00:00+08:00"', {"paid_at": "2026-12-01T01:59:59Z"}, False),
    ('paid_at == "2026-12-01T10:00:00+08:00"', {"paid_at": "2026-12-01T02:00:00+00:00"}, True),
    ('paid_at < "2026-12-01 10:00"', {"paid_at": "2026-12-01T09:59:00"}, True),  # both without a zone
    # plain text is still text
    ('currency == "CNY"', {"currency": "CNY"}, True),
    ('vendor > "M"', {"vendor": "Acme"}, False),
    ('"Acme" in vendor', {"vendor": "Acme Parts"}, True),
    ('reference == "0042"', {"reference": "INV-0042"}, False),
]


@pytest.mark.parametrize(("condition", "arguments", "expected"), DECIDED)
def test_numbers_decimal_strings_and_dates_compare_by_value(condition, arguments, expected):
    assert condition_requires_approval(condition, arguments) is expected


# (condition, arguments, the problem the approval request names)
UNJUDGED = [
    ("amount > 10000", {"amount": "fifty"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": "18,600.00"}, Problem.MISMATCH),  # thousands separators are text
    ("amount > 10000", {"amount": "1e5"}, Problem.MISMATCH),  # no exponents in decimal strings
    ("amount > 10000", {"amount": " 18600"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": "NaN"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": "Infinity"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": True}, Problem.MISMATCH),  # a boolean is never a number
    ("amount == 1", {"amount": False}, Problem.MISMATCH),
    ('amount > "abc"', {"amount": "50.00"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": "2026-12-01"}, Problem.MISMATCH),
    ("amount > 10000", {"amount": None}, Problem.MISMATCH),
    ("amount > 10000", {}, Problem.MISSING),
    ("amount > 10000", {"amount": float("nan")}, Problem.NOT_FINITE),
    ('due_date < "2027-01-01"', {"due_date": "next Tuesday"}, Problem.MISMATCH),
    ('due_date < "2027-01-01"', {"due_date": "2026-13-01"}, Problem.MISMATCH),  # not a real date
    ('due_date < "2027-01-01"', {"due_date": 20261201}, Problem.MISMATCH),
    ('due_date < "2027-01-01"', {"due_date": "2026-12-01T10:00:00+08:00"}, Problem.DATE_AND_DATETIME),
    ('paid_at > "2026-12-01T10:00:00+08:00"', {"paid_at": "2026-12-01T10:00:00"}, Problem.NAIVE_AND_AWARE),
    ('paid_at == "2026-12-01T10:00:00"', {"paid_at": "2026-12-01T10:00:00Z"}, Problem.NAIVE_AND_AWARE),
    ("approver < null", {"approver": None}, Problem.MISMATCH),
    ("lines > [1]", {"lines": [2]}, Problem.MISMATCH),
    ("urgent", {"urgent": "yes"}, Problem.NOT_A_COMPARISON),
    ("amount >>> 3", {"amount": 1}, Problem.INVALID),
]


@pytest.mark.parametrize(("condition", "arguments", "problem"), UNJUDGED)
def test_what_cannot_be_compared_requires_approval_and_says_why(condition, arguments, problem):
    outcome = evaluate_condition(condition, arguments)
    assert isinstance(outcome, Unjudged) and outcome.requires_approval
    assert outcome.problem == problem and outcome.condition == condition


def test_a_mismatch_names_the_argument_and_both_kinds():
    outcome = evaluate_condition("amount > 10000", {"amount": "fifty"})
    assert outcome == Unjudged(
        condition="amount > 10000",
        problem=Problem.MISMATCH,
        argument="amount",
        found="text",
        expected="number",
    )
    dated = evaluate_condition('order.due < "2027-01-01"', {"order": {"due": "2026-12-01T10:00:00Z"}})
    assert (dated.argument, dated.found, dated.expected) == ("order.due", "datetime", "date")


def test_a_held_call_says_which_condition_matched_and_a_passed_one_says_nothing():
    assert evaluate_condition("amount > 10000", {"amount": "18600.00"}) == Matched(condition="amount > 10000")
    assert evaluate_condition("amount > 10000", {"amount": "50.00"}) == NotMatched()
    assert evaluate_condition("  ", {"amount": "50.00"}) == Matched(condition="")
