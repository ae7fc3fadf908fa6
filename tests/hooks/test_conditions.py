"""The approval-condition language: safe parsing into an allow-listed tree, evaluation without ``eval``,
and failing closed (approval required) on anything doubtful."""

from __future__ import annotations

import pytest

from hooks.conditions import ConditionError, condition_requires_approval, parse_condition

PAYMENT = {"amount": 60000, "currency": "CNY", "vendor": {"country": "CN", "name": "Acme"}, "urgent": True}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("amount > 50000", True),
        ("amount > 70000", False),
        ('amount > 50000 and currency == "CNY"', True),
        ('amount > 50000 and currency == "USD"', False),
        ('amount > 70000 or currency == "CNY"', True),
        ("not amount > 50000", False),
        ("10000 < amount <= 60000", True),
        ('vendor.country in ["CN", "HK"]', True),
        ('vendor.country not in ["CN", "HK"]', False),
        ("urgent == true", True),
        ("urgent", True),
        ("amount >= -1", True),
        ('vendor.name == "Acme" and (amount > 1 or currency == "EUR")', True),
    ],
)
def test_conditions_evaluate_against_the_call_arguments(condition, expected):
    assert condition_requires_approval(condition, PAYMENT) is expected


@pytest.mark.parametrize(
    "condition",
    [
        "__import__('os').system('touch /tmp/pwned')",
        "open('/etc/passwd')",
        "amount.__class__",
        "vendor._secret == 1",
        "amount[0] > 1",
        "lambda: 1",
        "amount if True else 0",
        "[x for x in amount]",
        "amount + 1 > 2",
        "f'{amount}' == '1'",
        "amount := 3",
        "(1).real > 0",
        '-"a" == 1',
        "-true == 1",
        "amount > 1; import os",
        "",
        "x" * 2000,
    ],
)
def test_anything_outside_the_language_is_a_parse_error(condition):
    with pytest.raises(ConditionError):
        parse_condition(condition)


def test_an_unparseable_condition_at_run_time_requires_approval():
    assert condition_requires_approval("__import__('os')", PAYMENT) is True


@pytest.mark.parametrize(
    "arguments",
    [
        {},  # the argument is missing
        {"amount": "sixty thousand"},  # text where a number is compared
        {"amount": None},
        {"amount": True},  # a boolean is not a number here
        {"amount": [1, 2]},
        {"amount": {"value": 1}},
    ],
)
def test_a_missing_or_mistyped_argument_fails_closed(arguments):
    assert condition_requires_approval("amount > 50000", arguments) is True


def test_a_missing_argument_requires_approval_even_where_the_rest_would_short_circuit():
    assert condition_requires_approval('amount > 70000 and currency == "CNY"', {"currency": "CNY"}) is True
    assert condition_requires_approval("amount > 70000 and vendor.country == 'CN'", {"amount": 1}) is True


def test_an_empty_condition_means_every_covered_call_needs_approval():
    assert condition_requires_approval("", {}) is True
    assert condition_requires_approval("   ", PAYMENT) is True


def test_a_bare_value_that_is_not_true_or_false_fails_closed():
    assert condition_requires_approval("currency", PAYMENT) is True


def test_parsed_conditions_name_the_arguments_they_read():
    assert parse_condition("amount > 1 and vendor.country == 'CN' and true").paths == (
        ("amount",),
        ("vendor", "country"),
    )
