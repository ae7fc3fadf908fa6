"""The SQL guard alone: every write attempt of the corpus is refused by the parser, reads pass."""

from __future__ import annotations

import logging

import pytest

from connectors.sql.functions import ALLOWED_FUNCTIONS
from connectors.sql.guard import classify_sql, is_write_sql, template_as_sent
from tests.connectors.sql.write_corpus import LEGITIMATE_READS, WRITE_ATTEMPTS, Attempt


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
            "calls set_config(), which is not on the SQL guard's list of allowed read functions",
        ),
        (
            "SELECT * FROM ts_stat('SELECT 1')",
            "calls ts_stat(), which is not on the SQL guard's list of allowed read functions",
        ),
        (
            "SELECT public.lower('x')",
            "calls public.lower(); only built-in functions (unqualified or pg_catalog) are allowed",
        ),
        (
            "SELECT \"lower\"('x')",
            "calls a function by a quoted name ('lower'); write function names without quotes",
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


# Every place an expression can stand; "{f}" is where the call goes.
EXPRESSION_PLACES: tuple[str, ...] = (
    "SELECT {f}",
    "SELECT {f} AS x FROM t",
    "SELECT * FROM {f}",
    "SELECT * FROM {f} AS g(n)",
    "SELECT * FROM t, LATERAL {f} AS l",
    "SELECT * FROM ROWS FROM ({f}) AS r",
    "SELECT * FROM t JOIN u ON {f}",
    "SELECT * FROM t WHERE {f}",
    "SELECT * FROM t WHERE a IN (SELECT {f})",
    "SELECT * FROM t WHERE EXISTS (SELECT {f})",
    "SELECT a FROM t GROUP BY {f}",
    "SELECT a FROM t GROUP BY ROLLUP ({f})",
    "SELECT a FROM t GROUP BY a HAVING {f}",
    "SELECT a FROM t ORDER BY {f}",
    "SELECT a FROM t LIMIT {f} OFFSET {f}",
    "SELECT a FROM t FETCH FIRST {f} ROWS ONLY",
    "SELECT DISTINCT ON ({f}) a FROM t",
    "SELECT sum(a) OVER (PARTITION BY {f} ORDER BY {f}) FROM t",
    "SELECT count(*) FILTER (WHERE {f}) FROM t",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY {f}) FROM t",
    "SELECT a FROM t WINDOW w AS (ORDER BY {f})",
    "WITH x AS (SELECT {f}) SELECT * FROM x",
    "WITH RECURSIVE r(n) AS (SELECT {f}) SELECT * FROM r",
    "SELECT 1 UNION ALL SELECT {f}",
    "VALUES ({f})",
    "SELECT CASE WHEN {f} THEN {f} ELSE {f} END",
    "SELECT CASE {f} WHEN 1 THEN 2 END",
    "SELECT CAST({f} AS int), {f}::text",
    "SELECT ARRAY[{f}], ROW({f}), ({f}, 1)",
    "SELECT coalesce(NULL, {f}), lower({f}), jsonb_build_object('k', {f})",
    "SELECT substring({f} FROM 1 FOR 2), trim({f}), position({f} IN 'a'), extract(year FROM {f})",
    "SELECT a = ANY({f}), a = ALL({f})",
    "SELECT {f} IS NULL, NOT {f}, -{f}, {f} BETWEEN 1 AND 2, {f} LIKE 'x', {f} || 'x'",
    "SELECT x AT TIME ZONE {f} FROM t",
    "SELECT (SELECT {f})",
    "SELECT data->>{f}, data @> {f} FROM t",
    "SELECT concat(VARIADIC {f})",
)
REFUSED_CALLS: tuple[str, ...] = (
    "user_fn()",
    "guard_write()",
    "public.lower('x')",
    "evil.unnest(ARRAY[1])",
    "db.pg_catalog.lower('x')",
    "evil . trim('x')",
    "evil./**/lower('x')",
    "\"lower\"('x')",
    '"pg_catalog"."lower"(\'x\')',
    "ts_stat('SELECT 1')",
    "PG_SLEEP(1)",
    "if(true, 1, 2)",
    "argmax(1, 2)",
    "group_concat('x')",
    "pg_backend_pid()",
)


@pytest.mark.parametrize("place", EXPRESSION_PLACES)
@pytest.mark.parametrize("call", REFUSED_CALLS)
def test_a_function_outside_the_allow_list_is_refused_wherever_it_stands(place: str, call: str) -> None:
    sql = place.replace("{f}", call)

    verdict = classify_sql(sql)

    assert not verdict.is_single_read, f"the guard accepted {sql!r}"
    assert "call" in verdict.reason or "could not be parsed" in verdict.reason


@pytest.mark.parametrize("place", EXPRESSION_PLACES)
def test_an_allowed_function_is_accepted_wherever_it_stands(place: str) -> None:
    sql = place.replace("{f}", "pg_catalog.abs(1)")

    verdict = classify_sql(sql)

    assert verdict.is_single_read or verdict.reason == "the SQL could not be parsed", verdict.reason


def test_user_defined_functions_are_refused_because_the_guard_cannot_know_them() -> None:
    verdict = classify_sql("SELECT guard_write()")

    assert (
        verdict.reason
        == "calls guard_write(), which is not on the SQL guard's list of allowed read functions"
    )


def test_allow_list_holds_no_function_that_runs_sql_text_or_has_side_effects() -> None:
    refused = {
        "ts_stat", "ts_rewrite", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
        "cursor_to_xml", "table_to_xml", "schema_to_xml", "database_to_xml", "xpath", "set_config",
        "setseed", "nextval", "setval", "currval", "pg_sleep", "pg_notify", "txid_current",
        "pg_current_xact_id", "pg_backend_pid", "pg_terminate_backend", "pg_cancel_backend",
        "pg_advisory_lock", "pg_try_advisory_lock", "pg_advisory_xact_lock", "lo_import", "lo_get",
        "pg_read_file", "pg_ls_dir", "pg_stat_file", "dblink", "pg_export_snapshot",
    }  # fmt: skip

    assert not refused & ALLOWED_FUNCTIONS


@pytest.mark.parametrize(
    ("template", "writes"),
    [
        ("SELECT * FROM orders WHERE id = %(id)s", False),
        ("SELECT * FROM orders WHERE note LIKE 'a%%' AND id = %(id)s", False),
        ("UPDATE orders SET status = %(status)s WHERE id = %(id)s", True),
        ("INSERT INTO orders (id) VALUES (%(id)s) RETURNING id", True),
        ("WITH d AS (DELETE FROM orders WHERE id = %(id)s RETURNING id) SELECT * FROM d", True),
        ("SELECT nextval('orders_id_seq')", True),
        ("SELECT * FROM ts_stat(%(query)s)", True),
        ("SELECT month_report(%(month)s)", True),  # a function the guard cannot know counts as a write
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
