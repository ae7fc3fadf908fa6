"""The SQL guard alone: every write attempt of the corpus is refused by the parser, reads pass."""

from __future__ import annotations

import logging

import pytest

from connectors.sql_guard import classify_sql, is_write_sql, template_as_sent
from tests.connectors.sql_write_corpus import LEGITIMATE_READS, WRITE_ATTEMPTS, Attempt


def test_corpus_holds_at_least_thirty_write_attempts() -> None:
    assert sum(a.writes for a in WRITE_ATTEMPTS) >= 30


@pytest.mark.parametrize("attempt", WRITE_ATTEMPTS, ids=lambda a: a.why)
def test_parser_alone_refuses_every_corpus_entry(attempt: Attempt) -> None:
    verdict = classify_sql(attempt.sql)

    assert not verdict.is_single_read, f"the guard accepted {attempt.sql!r}"
    assert verdict.reason


@pytest.mark.parametrize("sql", LEGITIMATE_READS)
def test_legitimate_reads_pass(sql: str) -> None:
    verdict = classify_sql(sql)

    assert verdict.is_single_read, verdict.reason
    assert verdict.statement_count == 1


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE changes data"),
        ("SELECT * FROM t FOR UPDATE", "SELECT ... FOR UPDATE/SHARE locks rows"),
        ("SELECT * INTO t2 FROM t", "SELECT ... INTO creates a table"),
        (
            "SELECT set_config('a', 'b', false)",
            "calls set_config(), which has side effects or privileged access",
        ),
        (
            "EXPLAIN ANALYZE DELETE FROM t",
            "EXPLAIN is not a read query (only SELECT, VALUES or WITH ... SELECT)",
        ),
        ("SELECT 1; SELECT 2", "expected exactly one statement, found 2"),
        ("SELECT (", "the SQL could not be parsed"),
        ("   ", "empty SQL"),
    ],
)
def test_refusal_says_why(sql: str, reason: str) -> None:
    assert classify_sql(sql).reason == reason


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM t WHERE id IN (SELECT nextval('s'))",
        "SELECT coalesce(pg_sleep(1)::text, '') FROM t",
        "WITH x AS (SELECT pg_read_binary_file('/etc/passwd') AS f) SELECT * FROM x",
        "SELECT * FROM t, LATERAL lo_export(1, '/tmp/x') AS e",
        "SELECT * FROM t WHERE EXISTS (SELECT dblink('x', 'y'))",
        "SELECT pg_try_advisory_lock(1)",
        "SELECT PG_CATALOG.SET_CONFIG('a', 'b', false)",
        "SELECT \"set_config\"('a', 'b', false)",
    ],
)
def test_denied_functions_are_refused_anywhere_in_the_tree(sql: str) -> None:
    assert "calls " in classify_sql(sql).reason


def test_statement_count_is_reported() -> None:
    verdict = classify_sql("SELECT 1; SELECT 2; SELECT 3")

    assert verdict.statement_count == 3 and not verdict.is_single_read


def test_trailing_semicolons_and_comments_are_not_statements() -> None:
    assert classify_sql("SELECT 1; -- done").statement_count == 1
    assert classify_sql("SELECT 1;;").is_single_read


def test_user_defined_functions_are_left_to_the_read_only_transaction() -> None:
    # The function check is a denylist: it cannot know what a user function does. The database
    # layer refuses such a function's writes (test_database_adapter.py); a SELECT-only role helps too.
    assert classify_sql("SELECT guard_write()").is_single_read


@pytest.mark.parametrize(
    ("template", "writes"),
    [
        ("SELECT * FROM orders WHERE id = %(id)s", False),
        ("SELECT * FROM orders WHERE note LIKE 'a%%' AND id = %(id)s", False),
        ("UPDATE orders SET status = %(status)s WHERE id = %(id)s", True),
        ("INSERT INTO orders (id) VALUES (%(id)s) RETURNING id", True),
        ("WITH d AS (DELETE FROM orders WHERE id = %(id)s RETURNING id) SELECT * FROM d", True),
        ("SELECT nextval('orders_id_seq')", True),
        ("CALL close_month(%(month)s)", True),
    ],
)
def test_is_write_sql_judges_action_templates_with_placeholders(template: str, writes: bool) -> None:
    assert is_write_sql(template) is writes


def test_template_is_judged_as_psycopg_sends_it() -> None:
    assert template_as_sent("SELECT %(a)s, 'x%%' WHERE b = %(b)s") == "SELECT $1, 'x%' WHERE b = $1"


def test_parser_fallback_does_not_log_the_statement(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    classify_sql("EXPLAIN SELECT secret_column FROM payroll")

    assert "secret_column" not in caplog.text
