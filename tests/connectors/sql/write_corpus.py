"""Write attempts and legitimate reads for the free-form SQL defences.

Each defence must hold alone: the SQL guard refuses every attempt (``tests/connectors/sql/test_guard.py``)
and, with the guard bypassed, the database refuses every attempt that would write because the
statement runs in a READ ONLY transaction (``tests/connectors/sql/test_adapter.py``).

``writes=True``: the statement would change data, schema, sequences, large objects, row locks or
server files. ``writes=False``: it changes session state, reaches privileged functions, runs SQL
given as a string, or is simply not a query. The guard's function check is an allow list, so a
function it does not know (a user-defined one, another dialect's) is refused by the parser too.

Add to the corpus whenever a new way past either defence turns up; every entry is walked by both
test files.
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
CREATE TABLE guard_orders (
    id int PRIMARY KEY, customer text NOT NULL, amount numeric(12, 2) NOT NULL, status text NOT NULL,
    created_at timestamptz NOT NULL, data jsonb NOT NULL DEFAULT '{}'
);
INSERT INTO guard_orders VALUES
    (1, 'acme', 120.50, 'paid', now() - interval '3 days', '{"city": "Berlin", "vip": true, "tags": ["a", "b"]}'),
    (2, 'acme', 80.00, 'open', now() - interval '40 days', '{"city": "Berlin", "address": {"zip": "10115"}}'),
    (3, 'globex', 999.99, 'paid', now() - interval '1 day', '{"tags": ["b"]}'),
    (4, 'initech', 15.00, 'cancelled', now() - interval '10 days', '{}');
"""


DbDefence = Literal["refuses", "rolls_back", "resets", "role_refuses", "guard_only"]


@dataclass(frozen=True)
class Attempt:
    """One free-form SQL text an attacker (or a confused model) might send.

    ``db`` says how the database layer alone contains it (the SQL guard refuses all of them):
    ``refuses``: the call fails and nothing changes; ``rolls_back``: PostgreSQL lets it run in a
    read-only transaction (large objects) but the rollback leaves nothing behind; ``resets``:
    session state that DISCARD ALL removes before the next call; ``role_refuses``: privileged
    functions that a SELECT-only role may not call; ``guard_only``: nothing in the database stops
    it (a role may end its own sessions), so only the SQL guard does.
    """

    sql: str
    why: str
    writes: bool = True
    db: DbDefence = "refuses"


_OTHER_SESSIONS_OF_MY_ROLE = "FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()"

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
    # Functions that run SQL given as a string: whatever the string holds runs too.
    Attempt(
        "SELECT * FROM ts_stat($$SELECT to_tsvector(pg_terminate_backend(pid)::text) "
        + _OTHER_SESSIONS_OF_MY_ROLE
        + "$$)",
        "ts_stat runs a string that ends the role's other sessions",
        False,
        "guard_only",
    ),
    Attempt(
        "SELECT * FROM ts_stat('SELECT to_tsvector(pg_advisory_lock(4242)::text)')",
        "ts_stat runs a string that takes an advisory lock",
        False,
        "resets",
    ),
    Attempt(
        "SELECT * FROM ts_stat($$SELECT to_tsvector(set_config('connectors.leak', 'leaked', false))$$)",
        "ts_stat runs a string that changes a session setting",
        False,
        "resets",
    ),
    Attempt(
        "SELECT * FROM ts_stat($$SELECT to_tsvector(set_config('statement_timeout', '0', true))$$)",
        "ts_stat runs a string that turns the statement timeout off",
        False,
        "resets",
    ),
    Attempt(
        "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery FROM pg_advisory_lock(4243)')",
        "ts_rewrite runs its second argument as a query",
        False,
        "resets",
    ),
    Attempt(
        "SELECT query_to_xml('SELECT pg_advisory_lock(4244)::text', true, true, '')",
        "query_to_xml runs a string",
        False,
        "resets",
    ),
    Attempt(
        "SELECT query_to_xmlschema('SELECT 1', true, true, '')", "query_to_xmlschema", False, "rolls_back"
    ),
    Attempt(
        "SELECT query_to_xml_and_xmlschema('SELECT 1', true, true, '')",
        "query_to_xml_and_xmlschema",
        False,
        "rolls_back",
    ),
    Attempt(
        "SELECT table_to_xml('guard_target', true, true, '')",
        "table_to_xml runs a query",
        False,
        "rolls_back",
    ),
    Attempt("SELECT cursor_to_xml('c', 1, true, true, '')", "cursor_to_xml", False),
    Attempt(
        "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)", "dblink (not installed)", False
    ),
    # Side effects outside the data: locks, settings, notifications, transaction ids, other sessions.
    Attempt("SELECT pg_advisory_xact_lock(4260)", "a transaction advisory lock", False, "resets"),
    Attempt("SELECT pg_try_advisory_lock(4261)", "pg_try_advisory_lock", False, "resets"),
    Attempt("SELECT pg_advisory_lock_shared(4262)", "a shared advisory lock", False, "resets"),
    Attempt(
        "SELECT pg_try_advisory_xact_lock_shared(4263)", "pg_try_advisory_xact_lock_shared", False, "resets"
    ),
    Attempt("SELECT set_config('statement_timeout', '0', true)", "statement timeout off", False, "resets"),
    Attempt("SET search_path = pg_temp", "SET search_path", False, "resets"),
    Attempt("SELECT set_config('search_path', 'pg_temp', false)", "set_config search_path", False, "resets"),
    Attempt("SELECT pg_notify('connectors_channel', 'x')", "pg_notify", False, "rolls_back"),
    Attempt("SELECT pg_sleep_for('30 seconds')", "pg_sleep_for", False),
    Attempt("SELECT pg_sleep_until(now() + interval '30 seconds')", "pg_sleep_until", False),
    Attempt("SELECT txid_current()", "txid_current assigns a transaction id", False, "rolls_back"),
    Attempt(
        "SELECT pg_current_xact_id()", "pg_current_xact_id assigns a transaction id", False, "rolls_back"
    ),
    Attempt("SELECT setseed(0.5)", "setseed changes the session's random sequence", False, "rolls_back"),
    Attempt("SELECT pg_export_snapshot()", "pg_export_snapshot", False, "rolls_back"),
    Attempt("SELECT lo_unlink(424242)", "lo_unlink removes a large object"),
    Attempt(
        "SELECT pg_read_binary_file('/etc/hostname')", "read a server file as bytes", False, "role_refuses"
    ),
    Attempt("SELECT pg_stat_file('/etc/hostname')", "stat a server file", False, "role_refuses"),
    Attempt("SELECT pg_reload_conf()", "reload the server configuration", False, "role_refuses"),
    Attempt("SELECT pg_switch_wal()", "switch the WAL file", False, "role_refuses"),
    Attempt(
        "SELECT pg_terminate_backend(pid) " + _OTHER_SESSIONS_OF_MY_ROLE,
        "end the role's other sessions",
        False,
        "guard_only",
    ),
    Attempt(
        "SELECT pg_cancel_backend(pid) " + _OTHER_SESSIONS_OF_MY_ROLE,
        "cancel the role's other sessions' queries",
        False,
        "guard_only",
    ),
    # Functions the guard does not know: user-defined, schema-qualified, quoted, another dialect's.
    Attempt("SELECT guard_write()", "a user function that writes"),
    Attempt("SELECT public.guard_write()", "a schema-qualified user function"),
    Attempt('SELECT "guard_write"()', "a quoted user function name"),
    Attempt("SELECT public.lower('X')", "a built-in name in another schema", False),
    Attempt("SELECT \"LOWER\"('X')", "a quoted name is not the built-in", False),
    Attempt("SELECT argmax(id, name) FROM guard_target", "a function of another dialect", False),
    Attempt("SELECT if(true, 1, 2)", "IF is not a PostgreSQL function", False),
    # A refused function is found wherever it sits in the statement.
    Attempt("SELECT id FROM guard_target ORDER BY pg_try_advisory_lock(id)", "in ORDER BY", False, "resets"),
    Attempt(
        "SELECT id FROM guard_target LIMIT length(pg_advisory_lock(4271)::text) + 1",
        "in LIMIT",
        False,
        "resets",
    ),
    Attempt(
        "SELECT CASE WHEN id > 0 THEN pg_try_advisory_lock(id) END FROM guard_target",
        "in CASE",
        False,
        "resets",
    ),
    Attempt("WITH x AS (SELECT pg_try_advisory_lock(4272)) SELECT * FROM x", "in a CTE", False, "resets"),
    Attempt("SELECT ARRAY[pg_try_advisory_lock(4273)]", "in an ARRAY", False, "resets"),
    Attempt("SELECT (SELECT pg_try_advisory_lock(4274))", "in a scalar subquery", False, "resets"),
    Attempt("SELECT id FROM guard_target WHERE pg_try_advisory_lock(id)", "in WHERE", False, "resets"),
    Attempt(
        "SELECT count(*) FILTER (WHERE pg_try_advisory_lock(id)) FROM guard_target",
        "in an aggregate FILTER",
        False,
        "resets",
    ),
    Attempt(
        "SELECT row_number() OVER (ORDER BY pg_try_advisory_lock(id)) FROM guard_target",
        "in a window",
        False,
        "resets",
    ),
    Attempt(
        "SELECT jsonb_build_object('k', pg_try_advisory_lock(4275))",
        "as an allowed function's argument",
        False,
        "resets",
    ),
    Attempt("VALUES (pg_try_advisory_lock(4276))", "in VALUES", False, "resets"),
    Attempt(
        "SELECT * FROM guard_target, LATERAL (SELECT pg_try_advisory_lock(guard_target.id)) l",
        "in a LATERAL subquery",
        False,
        "resets",
    ),
    Attempt(
        "SELECT id FROM guard_target GROUP BY id HAVING pg_try_advisory_lock(id)",
        "in HAVING",
        False,
        "resets",
    ),
    Attempt("SELECT 1 UNION SELECT pg_try_advisory_lock(4277)::int", "in a UNION branch", False, "resets"),
    Attempt("SELECT coalesce(NULL, pg_try_advisory_lock(4278))", "in COALESCE", False, "resets"),
    Attempt(
        "SELECT * FROM generate_series(1, pg_try_advisory_lock(4280)::int)",
        "as a set-returning function's argument",
        False,
        "resets",
    ),
    Attempt(
        "SELECT DISTINCT ON (pg_try_advisory_lock(id)) id FROM guard_target",
        "in DISTINCT ON",
        False,
        "resets",
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
    "SELECT 1; -- done",
    # Reporting queries a model writes: dates, aggregates, windows, JSON, strings, casts.
    "SELECT date_trunc('month', created_at) AS month, count(*) FILTER (WHERE status = 'paid') AS paid,"
    " coalesce(sum(amount), 0) AS total FROM guard_orders GROUP BY 1 ORDER BY 1",
    "SELECT customer, sum(amount) OVER (PARTITION BY customer ORDER BY created_at) AS running,"
    " rank() OVER (ORDER BY amount DESC) FROM guard_orders",
    "SELECT customer, string_agg(DISTINCT status, ', ' ORDER BY status) AS statuses, round(avg(amount), 2)"
    " FROM guard_orders GROUP BY customer HAVING count(*) > 1",
    "SELECT data->>'city' AS city, data->'address'->>'zip' AS zip, data #>> '{tags,0}' AS first_tag"
    " FROM guard_orders WHERE data ? 'city' OR data @> '{\"vip\": true}'",
    "SELECT extract(year FROM created_at) AS y, to_char(created_at, 'YYYY-MM') AS ym,"
    " date_part('dow', created_at) AS dow FROM guard_orders",
    "SELECT * FROM guard_orders WHERE created_at >= now() - interval '30 days'"
    " AND created_at < date_trunc('day', now()) + interval '1 day'",
    "SELECT lag(amount) OVER w, lead(amount, 1, 0) OVER w, first_value(amount) OVER w, ntile(2) OVER w,"
    " row_number() OVER w FROM guard_orders WINDOW w AS (ORDER BY created_at)",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median, max(amount), min(amount),"
    " stddev_samp(amount) FROM guard_orders",
    "SELECT CASE WHEN amount > 100 THEN 'large' ELSE 'small' END AS size, count(*) FROM guard_orders GROUP BY 1",
    "SELECT upper(customer), lower(status), length(customer), substring(customer FROM 1 FOR 3),"
    " trim(both ' ' FROM customer), concat_ws('-', customer, status), split_part('a,b', ',', 2),"
    " replace(customer, 'a', 'A'), left(customer, 2), lpad(id::text, 5, '0') FROM guard_orders",
    "SELECT jsonb_array_elements_text(data->'tags') AS tag, count(*) FROM guard_orders GROUP BY 1",
    "SELECT nullif(status, ''), greatest(amount, 0), least(amount, 1000), abs(amount - 100), amount::int,"
    " CAST(amount AS text) FROM guard_orders",
    "SELECT customer, array_agg(id ORDER BY id), jsonb_agg(jsonb_build_object('id', id, 'amount', amount))"
    " FROM guard_orders GROUP BY customer",
    "SELECT d::date AS day, count(o.id) FROM generate_series(date '2024-01-01', date '2024-01-07',"
    " interval '1 day') d LEFT JOIN guard_orders o ON o.created_at::date = d::date GROUP BY 1 ORDER BY 1",
    "SELECT age(now(), created_at), justify_interval(now() - created_at), make_date(2024, 1, 1),"
    " to_date('2024-02-01', 'YYYY-MM-DD') FROM guard_orders",
    "SELECT count(DISTINCT customer), sum(amount) / nullif(count(*), 0) FROM guard_orders"
    " WHERE status IN ('paid', 'open') AND customer ILIKE 'a%' AND customer ~ '^[a-z]'",
    "SELECT table_name, column_name, data_type FROM information_schema.columns"
    " WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    "SELECT current_database(), current_user, version()",
    "SELECT unnest(ARRAY[1, 2, 3]) AS n",
    "SELECT status, count(*) FROM guard_orders GROUP BY ROLLUP (status)",
    "SELECT to_tsvector('simple', customer) @@ plainto_tsquery('simple', 'acme') FROM guard_orders",
    "SELECT md5(customer), encode(sha256(customer::bytea), 'hex'), gen_random_uuid() IS NOT NULL FROM guard_orders",
    "SELECT pg_catalog.lower('X')",
    "SELECT coalesce(data->>'city', 'unknown') AS city, bool_or(status = 'paid') FROM guard_orders GROUP BY 1",
    "SELECT format('%s: %s', customer, amount), regexp_replace(customer, '\\s+', ' ', 'g') FROM guard_orders",
    'SELECT * FROM jsonb_each_text(\'{"a": 1, "b": 2}\'::jsonb)',
    "SELECT EXISTS (SELECT 1 FROM guard_orders WHERE amount > 1000), 5 = ANY(ARRAY[1, 5])",
    "SELECT width_bucket(amount, 0, 1000, 4) AS bucket, count(*) FROM guard_orders GROUP BY 1",
    "SELECT extract(epoch FROM max(created_at) - min(created_at)) / 3600 AS hours FROM guard_orders",
    "SELECT date_bin('15 minutes', created_at, timestamptz '2024-01-01') FROM guard_orders",
    "SELECT o.id, t.name FROM guard_orders o JOIN guard_target t ON t.id = o.id WHERE o.amount BETWEEN 10 AND 500",
    "SELECT * FROM guard_orders ORDER BY amount DESC NULLS LAST LIMIT 2 OFFSET 1",
    "SELECT id, name FROM guard_target t WHERE NOT EXISTS (SELECT 1 FROM guard_orders o WHERE o.id = t.id)",
    "SELECT (data->'tags')::jsonb ? 'a', jsonb_array_length(coalesce(data->'tags', '[]')) FROM guard_orders",
    "SELECT to_char(now(), 'YYYY-MM-DD'), current_date - 7, localtimestamp, clock_timestamp() IS NOT NULL",
)
