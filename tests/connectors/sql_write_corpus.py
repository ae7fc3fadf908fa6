"""Write attempts and legitimate reads for the free-form SQL defences.

Each defence must hold alone: the SQL guard refuses every attempt (``tests/connectors/test_sql_guard.py``)
and, with the guard bypassed, the database refuses every attempt that would write because the
statement runs in a READ ONLY transaction (``tests/connectors/test_database_adapter.py``).

``writes=True``: the statement would change data, schema, sequences, large objects, row locks or
server files. ``writes=False``: it changes session state, reaches privileged functions, or is
simply not a query. A user-defined function that writes is not here: the guard's function check
is a denylist and cannot know user functions, so that case is left to the database layer alone
(``test_database_adapter.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SETUP_SQL = """
CREATE TABLE guard_target (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO guard_target VALUES (1, 'alpha'), (2, 'beta'), (3, 'gamma');
CREATE SEQUENCE guard_seq;
CREATE FUNCTION guard_write() RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO guard_target VALUES (1000, 'written by a function'); RETURN 1; END $$;
CREATE PROCEDURE guard_proc() LANGUAGE plpgsql AS $$ BEGIN DELETE FROM guard_target; END $$;
CREATE VIEW guard_view AS SELECT id, name FROM guard_target;
"""


DbDefence = Literal["refuses", "rolls_back", "resets", "role_refuses"]


@dataclass(frozen=True)
class Attempt:
    """One free-form SQL text an attacker (or a confused model) might send.

    ``db`` says how the database layer alone contains it (the SQL guard refuses all of them):
    ``refuses``: the call fails and nothing changes; ``rolls_back``: PostgreSQL lets it run in a
    read-only transaction (large objects) but the rollback leaves nothing behind; ``resets``:
    session state that DISCARD ALL removes before the next call; ``role_refuses``: privileged
    functions that a SELECT-only role may not call.
    """

    sql: str
    why: str
    writes: bool = True
    db: DbDefence = "refuses"


WRITE_ATTEMPTS: tuple[Attempt, ...] = (
    Attempt("INSERT INTO guard_target VALUES (99, 'x')", "plain INSERT"),
    Attempt("UPDATE guard_target SET name = 'pwned'", "plain UPDATE"),
    Attempt("DELETE FROM guard_target", "plain DELETE"),
    Attempt("TRUNCATE guard_target", "TRUNCATE"),
    Attempt("DROP TABLE guard_target", "DROP"),
    Attempt("ALTER TABLE guard_target ADD COLUMN evil int", "ALTER"),
    Attempt("CREATE TABLE evil (id int)", "CREATE"),
    Attempt("GRANT ALL ON guard_target TO PUBLIC", "GRANT"),
    Attempt("COMMENT ON TABLE guard_target IS 'pwned'", "COMMENT changes the catalog"),
    Attempt(
        "MERGE INTO guard_target t USING (VALUES (1)) v(id) ON t.id = v.id WHEN MATCHED THEN DELETE",
        "MERGE",
    ),
    Attempt("INSERT INTO guard_target SELECT id + 100, name FROM guard_target", "INSERT ... SELECT"),
    Attempt("WITH d AS (DELETE FROM guard_target RETURNING *) SELECT * FROM d", "writable CTE (DELETE)"),
    Attempt(
        "WITH u AS (UPDATE guard_target SET name = 'x' RETURNING id) SELECT count(*) FROM u",
        "writable CTE (UPDATE)",
    ),
    Attempt(
        "WITH i AS (INSERT INTO guard_target VALUES (100, 'y') RETURNING id) SELECT * FROM i",
        "writable CTE (INSERT)",
    ),
    Attempt(
        "WITH d AS MATERIALIZED (DELETE FROM guard_target RETURNING 1) SELECT 1",
        "writable CTE with MATERIALIZED",
    ),
    Attempt(
        "SELECT * FROM (WITH d AS (DELETE FROM guard_target RETURNING *) SELECT * FROM d) s",
        "writable CTE nested in a subquery",
    ),
    Attempt("EXPLAIN ANALYZE DELETE FROM guard_target", "EXPLAIN ANALYZE executes the DELETE"),
    Attempt("EXPLAIN (ANALYZE, BUFFERS) UPDATE guard_target SET name = 'x'", "EXPLAIN (ANALYZE) UPDATE"),
    Attempt("SELECT * FROM guard_target FOR UPDATE", "row lock FOR UPDATE"),
    Attempt("SELECT * FROM guard_target FOR SHARE", "row lock FOR SHARE"),
    Attempt("SELECT id FROM guard_target FOR NO KEY UPDATE SKIP LOCKED", "row lock FOR NO KEY UPDATE"),
    Attempt("SELECT 1 UNION ALL (SELECT id FROM guard_target FOR UPDATE)", "row lock inside a UNION"),
    Attempt("SELECT 1 WHERE EXISTS (SELECT 1 FROM guard_target FOR UPDATE)", "row lock inside a subquery"),
    Attempt("SELECT * INTO evil_copy FROM guard_target", "SELECT INTO creates a table"),
    Attempt("SELECT lo_create(0)", "lo_create makes a large object", db="rolls_back"),
    Attempt("SELECT lo_from_bytea(0, 'pwned')", "lo_from_bytea makes a large object", db="rolls_back"),
    Attempt("SELECT nextval('guard_seq')", "nextval advances a sequence"),
    Attempt("SELECT setval('guard_seq', 1000)", "setval moves a sequence"),
    Attempt("SELECT pg_catalog.nextval('guard_seq')", "schema-qualified nextval"),
    Attempt("SELECT query_to_xml('DELETE FROM guard_target', true, true, '')", "SQL text run by a function"),
    Attempt("COPY guard_target FROM PROGRAM 'true'", "COPY FROM PROGRAM"),
    Attempt("COPY guard_target TO '/tmp/connectors_guard_copy.csv'", "COPY TO a server file"),
    Attempt("CALL guard_proc()", "CALL a procedure that deletes"),
    Attempt("DO $$ BEGIN DELETE FROM guard_target; END $$", "DO block"),
    Attempt("LOCK TABLE guard_target IN ACCESS EXCLUSIVE MODE", "LOCK TABLE"),
    Attempt("VACUUM guard_target", "VACUUM"),
    Attempt("SELECT 1; DELETE FROM guard_target", "two statements"),
    Attempt("SELECT 1; COMMIT; DELETE FROM guard_target", "COMMIT out of the read-only transaction"),
    Attempt("ROLLBACK; DELETE FROM guard_target", "ROLLBACK out of the read-only transaction"),
    Attempt("SET TRANSACTION READ WRITE; DELETE FROM guard_target", "switch the transaction to read-write"),
    Attempt("SELECT 1 -- harmless\n; DELETE FROM guard_target", "second statement after a line comment"),
    Attempt("/* only a read */ DeLeTe /* really */ FROM guard_target", "comments around a DELETE"),
    Attempt("sElEcT 1 ; uPdAtE guard_target sEt name = 'x'", "mixed casing, two statements"),
    Attempt("SELECT '\\'; DELETE FROM guard_target; --'", "backslash is not an escape in standard strings"),
    Attempt(
        "SELECT $$; DELETE$$; DELETE FROM guard_target", "a dollar-quoted string before the second statement"
    ),
    Attempt("SELECT * FROM guard_target; DROP TABLE guard_target;", "trailing DROP"),
    Attempt("INSERT INTO guard_target VALUES (%(id)s, 'x')", "a template-style placeholder"),
    Attempt("SELECT 1 /* /* nested */ ; DELETE FROM guard_target; /* */", "nested block comments"),
    # Not data writes: session state, privileged reach, or simply not a query.
    Attempt("SELECT set_config('connectors.leak', 'leaked', false)", "set_config", False, "resets"),
    Attempt(
        "SELECT pg_catalog.set_config('connectors.leak', 'leaked', false)",
        "qualified set_config",
        False,
        "resets",
    ),
    Attempt(
        "SELECT U&\"\\0073et_config\"('connectors.leak', 'leaked', false)",
        "Unicode-escaped function name",
        False,
        "resets",
    ),
    Attempt("SET connectors.leak = 'leaked'", "SET a session variable", False, "resets"),
    Attempt(
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "later transactions writable",
        False,
        "resets",
    ),
    Attempt("SELECT pg_advisory_lock(4242)", "a session advisory lock outlives the call", False, "resets"),
    Attempt("PREPARE evil AS DELETE FROM guard_target", "plant a prepared statement", False, "resets"),
    Attempt("LISTEN connectors_channel", "a session listener", False, "resets"),
    Attempt("SELECT pg_sleep(30)", "hold a connection (ended by the statement timeout)", False),
    Attempt(
        "SELECT lo_import('/etc/hostname')", "read a server file into a large object", False, "role_refuses"
    ),
    Attempt("SELECT pg_read_file('/etc/hostname')", "read a server file", False, "role_refuses"),
    Attempt("SELECT * FROM pg_ls_dir('/')", "list a server directory", False, "role_refuses"),
    Attempt(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()",
        "kill other sessions",
        False,
        "role_refuses",
    ),
    Attempt(
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()",
        "cancel other sessions' queries",
        False,
        "role_refuses",
    ),
    Attempt(
        "SELECT dblink_exec('dbname=x', 'DELETE FROM guard_target')", "dblink (not installed here)", False
    ),
    Attempt("EXPLAIN SELECT 1", "EXPLAIN is refused entirely", False),
    Attempt("SHOW ALL", "not a query", False),
    Attempt("NOTIFY connectors_channel", "notify other sessions", False),
    Attempt("", "empty", False),
    Attempt("SELECT (", "unparsable", False),
)

LEGITIMATE_READS: tuple[str, ...] = (
    "SELECT 1",
    "SELECT id, name FROM guard_target ORDER BY id",
    "select count(*) from guard_target where name like 'a%'",
    "WITH t AS (SELECT id FROM guard_target) SELECT * FROM t",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "SELECT 1 UNION ALL SELECT 2",
    "SELECT id FROM guard_target EXCEPT SELECT 2",
    "VALUES (1, 'a'), (2, 'b')",
    "(SELECT 1)",
    "TABLE guard_target",
    "SELECT now(), current_date",
    "SELECT jsonb_build_object('id', id, 'name', name) FROM guard_target",
    "SELECT * FROM generate_series(1, 3)",
    "SELECT 'DELETE FROM guard_target' AS looks_like_a_write",
    "SELECT $$; DELETE FROM guard_target$$ AS dollar_quoted",
    "SELECT 1;",
    "SELECT 1 -- trailing comment",
    "/* leading comment */ SELECT 2",
    "SELECT e.id FROM guard_target e JOIN guard_target f ON e.id = f.id",
    "SELECT name, count(*) FROM guard_target GROUP BY name HAVING count(*) > 0",
    "SELECT id FROM guard_target WHERE id = ANY(ARRAY[1, 2])",
    "SELECT current_setting('statement_timeout')",
    "SELECT id, row_number() OVER (ORDER BY name DESC) FROM guard_target",
    "SELECT * FROM guard_view WHERE id IN (SELECT id FROM guard_target WHERE name <> 'beta')",
    "SELECT last_value FROM guard_seq",
)
