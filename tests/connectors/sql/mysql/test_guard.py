"""The SQL guard in the MySQL dialect: every attempt of the MySQL corpus is refused by the parser
alone, the legitimate reads pass, and templates are judged as the driver sends them."""

from __future__ import annotations

import pytest

from connectors.sql.guard import classify_sql, guard_family, is_write_sql
from tests.connectors.sql.mysql.write_corpus import (
    GUARD_ONLY_ATTEMPTS,
    LEGITIMATE_READS,
    WRITE_ATTEMPTS,
    Attempt,
)


@pytest.mark.parametrize("attempt", WRITE_ATTEMPTS, ids=lambda a: a.why)
def test_guard_alone_refuses_every_mysql_write_attempt(attempt: Attempt) -> None:
    verdict = classify_sql(attempt.sql, engine="mysql")

    assert not verdict.is_single_read, attempt.sql
    assert verdict.reason


@pytest.mark.parametrize("sql", GUARD_ONLY_ATTEMPTS)
def test_guard_refuses_locking_reads_hints_stored_functions_and_non_queries(sql: str) -> None:
    assert not classify_sql(sql, engine="mariadb").is_single_read


@pytest.mark.parametrize("sql", LEGITIMATE_READS)
def test_legitimate_mysql_reads_pass_the_guard(sql: str) -> None:
    verdict = classify_sql(sql, engine="mysql")

    assert verdict.is_single_read, verdict.reason


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * FROM t INTO OUTFILE '/tmp/x'", "INTO OUTFILE writes a file"),
        ("SELECT 'x' INTO DUMPFILE '/tmp/x'", "INTO DUMPFILE writes a file"),
        ("SELECT LOAD_FILE('/etc/passwd')", "load_file()"),
        ("SELECT SLEEP(1)", "sleep()"),
        ("SELECT BENCHMARK(10, MD5('a'))", "benchmark()"),
        ("SELECT * FROM t FOR UPDATE", "locks rows"),
        ("SELECT @a := 1", "assigns a user variable"),
        ("SELECT 1 INTO @a", "stores the result in variables"),
        ("HANDLER t OPEN", "HANDLER is not a read query"),
        ("DO 1", "DO is not a read query"),
        ("CALL p()", "CALL is not a read query"),
        ("SET @a = 1", "SET is not a read query"),
        ("SELECT 1; SELECT 2", "exactly one statement, found 2"),
        ("SELECT 1 /*! , SLEEP(1) */", "which MySQL executes or obeys"),
        ("SELECT shop.total(1)", "only built-in functions (unqualified)"),
    ],
)
def test_guard_names_why_a_mysql_statement_is_refused(sql: str, reason: str) -> None:
    verdict = classify_sql(sql, engine="mysql")

    assert not verdict.is_single_read
    assert reason in verdict.reason


def test_postgresql_keeps_its_own_dialect_and_rules() -> None:
    assert classify_sql("SELECT `id` FROM t", engine="mysql").is_single_read
    assert not classify_sql("SELECT `id` FROM t").is_single_read  # not PostgreSQL
    assert classify_sql("SELECT pg_catalog.lower('A')").is_single_read
    assert not classify_sql("SELECT pg_catalog.lower('A')", engine="mysql").is_single_read


def test_mysql_templates_are_judged_with_their_parameters_as_values() -> None:
    assert not is_write_sql("SELECT * FROM t WHERE a = %(a)s LIMIT %(n)s", engine="mysql")
    assert is_write_sql("UPDATE t SET a = %(a)s WHERE id = %(id)s", engine="mysql")
    assert is_write_sql("SELECT * FROM t WHERE a = %(a)s FOR UPDATE", engine="mariadb")


def test_every_engine_name_maps_to_a_guard_dialect() -> None:
    assert [guard_family(e) for e in ("postgresql", "mysql", "mariadb")] == ["postgresql", "mysql", "mysql"]
