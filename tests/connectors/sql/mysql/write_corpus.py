"""Write attempts and legitimate reads for the MySQL/MariaDB free-form SQL defences.

The SQL guard (MySQL dialect) refuses every attempt (``tests/connectors/sql/mysql/test_guard.py``).
With the guard bypassed, each attempt meets the database's own layers
(``tests/connectors/sql/mysql/test_adapter.py``), and ``db`` says which one holds it alone:

``read_only``: the ``START TRANSACTION READ ONLY`` refuses it even for an account that could write
(MySQL and MariaDB refuse data changes there, error 1792; multi-statements are off for the session,
so a second statement is a syntax error). ``account``: the READ ONLY transaction does not stop it
(DDL and account statements commit the transaction implicitly and run; ``INTO OUTFILE`` and
``LOAD_FILE`` are not data changes), so only the SELECT-only account does. ``resets``: session
state that the reset between calls removes (the next call sees none of it). ``timeout``: nothing in
the database refuses it, the statement timeout ends it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SETUP_STATEMENTS: tuple[str, ...] = (
    "CREATE TABLE guard_target (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
    "INSERT INTO guard_target VALUES (1, 'alpha'), (2, 'beta'), (3, 'gamma')",
    "CREATE PROCEDURE guard_proc() DELETE FROM guard_target",
    "CREATE FUNCTION guard_write() RETURNS INT MODIFIES SQL DATA"
    " BEGIN INSERT INTO guard_target VALUES (1000, 'by a function'); RETURN 1; END",
    "CREATE TABLE guard_orders (id INT PRIMARY KEY, customer VARCHAR(40) NOT NULL,"
    " amount DECIMAL(12, 2) NOT NULL, status VARCHAR(20) NOT NULL, created_at DATETIME NOT NULL,"
    " data JSON NOT NULL)",
    "INSERT INTO guard_orders VALUES"
    " (1, 'acme', 120.50, 'paid', NOW() - INTERVAL 3 DAY, '{\"city\": \"Berlin\", \"vip\": true}'),"
    " (2, 'acme', 80.00, 'open', NOW() - INTERVAL 40 DAY, '{\"city\": \"Berlin\"}'),"
    " (3, 'globex', 999.99, 'paid', NOW() - INTERVAL 1 DAY, '{\"tags\": [\"b\"]}'),"
    " (4, 'initech', 15.00, 'cancelled', NOW() - INTERVAL 10 DAY, '{}')",
)

Layer = Literal["read_only", "account", "resets", "timeout"]


@dataclass(frozen=True)
class Attempt:
    """One free-form SQL text an attacker (or a confused model) might send to a MySQL connector."""

    sql: str
    why: str
    db: Layer = "read_only"


WRITE_ATTEMPTS: tuple[Attempt, ...] = (
    Attempt("INSERT INTO guard_target VALUES (99, 'x')", "plain INSERT"),
    Attempt("UPDATE guard_target SET name = 'pwned'", "plain UPDATE"),
    Attempt("DELETE FROM guard_target", "plain DELETE"),
    Attempt("REPLACE INTO guard_target VALUES (1, 'replaced')", "REPLACE"),
    Attempt("INSERT INTO guard_target SELECT id + 100, name FROM guard_target", "INSERT ... SELECT"),
    Attempt("SELECT guard_write()", "a stored function that writes"),
    Attempt("CALL guard_proc()", "CALL of a procedure that writes"),
    Attempt("SELECT 1; DELETE FROM guard_target", "a second statement"),
    Attempt(
        "SELECT * FROM guard_target WHERE id = 1 FOR UPDATE; DELETE FROM guard_target", "FOR UPDATE and more"
    ),
    Attempt("LOAD DATA INFILE '/etc/hostname' INTO TABLE guard_target", "LOAD DATA"),
    Attempt("TRUNCATE guard_target", "TRUNCATE", db="account"),
    Attempt("DROP TABLE guard_target", "DROP", db="account"),
    Attempt("ALTER TABLE guard_target ADD COLUMN evil INT", "ALTER", db="account"),
    Attempt("CREATE TABLE evil (id INT)", "CREATE TABLE", db="account"),
    Attempt("RENAME TABLE guard_target TO moved", "RENAME", db="account"),
    Attempt("CREATE VIEW evil_view AS SELECT 1", "CREATE VIEW", db="account"),
    Attempt("GRANT SELECT ON *.* TO CURRENT_USER", "GRANT", db="account"),
    Attempt(
        "SELECT * FROM guard_target INTO OUTFILE '/tmp/part_n_outfile.txt'", "INTO OUTFILE", db="account"
    ),
    Attempt("SELECT 'x' INTO DUMPFILE '/tmp/part_n_dumpfile.bin'", "INTO DUMPFILE", db="account"),
    Attempt("SELECT LOAD_FILE('/etc/hostname')", "LOAD_FILE reads a server file", db="account"),
    Attempt("LOCK TABLES guard_target WRITE", "LOCK TABLES", db="account"),
    Attempt("SET GLOBAL max_connections = 152", "SET GLOBAL", db="account"),
    Attempt("SET @v = 1", "SET a user variable", db="resets"),
    Attempt("SELECT @v := 1", "assign a user variable in a SELECT", db="resets"),
    Attempt("SELECT id INTO @v FROM guard_target LIMIT 1", "SELECT ... INTO a variable", db="resets"),
    Attempt("SELECT GET_LOCK('part_n_lock', 0)", "take a named lock", db="resets"),
    Attempt("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'", "change how strings are read", db="resets"),
    Attempt("HANDLER guard_target OPEN", "HANDLER", db="resets"),
    Attempt("SELECT SLEEP(30)", "SLEEP", db="timeout"),
    Attempt("DO SLEEP(30)", "DO", db="timeout"),
    Attempt("SELECT BENCHMARK(5000000000, MD5('x'))", "BENCHMARK", db="timeout"),
    Attempt("SELECT 1 /*! , SLEEP(30) */", "an executable comment", db="timeout"),
    Attempt("INSERT INTO guard_target VALUES (97, 'x'), (98, 'y')", "INSERT of a table value constructor"),
    Attempt(
        "INSERT INTO guard_target (id, name) VALUES (96, 'x') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT ... ON DUPLICATE KEY UPDATE",
    ),
    Attempt("VALUES (1), ((SELECT SLEEP(30)))", "SLEEP inside a table value constructor", db="timeout"),
)

# Only the guard's view of these: they are reads for the database but must not pass as plain reads.
GUARD_ONLY_ATTEMPTS: tuple[str, ...] = (
    "SELECT * FROM guard_target FOR UPDATE",
    "SELECT * FROM guard_target LOCK IN SHARE MODE",
    "SELECT * FROM guard_target FOR SHARE",
    "SELECT /*+ SET_VAR(max_execution_time=0) */ * FROM guard_target",
    "SELECT 1 /*M! , SLEEP(1) */",
    "SELECT part_n.f(1)",
    "SELECT `sleep`(1)",
    "SHOW GRANTS",
    "EXPLAIN SELECT 1",
    "",
    ";",
)

LEGITIMATE_READS: tuple[str, ...] = (
    "SELECT id, name FROM guard_target ORDER BY id",
    "SELECT `id`, `name` FROM `guard_target` WHERE name LIKE 'a%'",
    "SELECT customer, SUM(amount) AS total FROM guard_orders GROUP BY customer HAVING SUM(amount) > 10",
    "SELECT id, JSON_UNQUOTE(JSON_EXTRACT(data, '$.city')) AS city FROM guard_orders",
    "SELECT id, JSON_VALUE(data, '$.city') FROM guard_orders WHERE JSON_CONTAINS(data, 'true', '$.vip')",
    "WITH paid AS (SELECT * FROM guard_orders WHERE status = 'paid') SELECT COUNT(*) FROM paid",
    "SELECT DATE_FORMAT(created_at, '%Y-%m') AS month, COUNT(*) FROM guard_orders GROUP BY month",
    "SELECT id, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC) FROM guard_orders",
    "SELECT IFNULL(NULL, 1), COALESCE(NULL, 2), IF(1 > 0, 'yes', 'no'), CASE WHEN 1 THEN 'a' END",
    "SELECT GROUP_CONCAT(name ORDER BY name SEPARATOR ', ') FROM guard_target",
    "SELECT CAST(amount AS CHAR), CONVERT(amount, SIGNED), ROUND(AVG(amount), 2) FROM guard_orders GROUP BY amount",
    "SELECT * FROM guard_orders WHERE created_at > NOW() - INTERVAL 7 DAY ORDER BY id LIMIT 2, 5",
    "SELECT TIMESTAMPDIFF(DAY, created_at, NOW()), DATE_ADD(created_at, INTERVAL 1 MONTH) FROM guard_orders",
    "SELECT a.id, b.customer FROM guard_target a JOIN guard_orders b ON a.id = b.id",
    "SELECT id FROM guard_target UNION ALL SELECT id FROM guard_orders",
    "SELECT VERSION(), DATABASE(), CURRENT_USER(), @@version",
    "SELECT 'it''s', 'back\\\\slash', \"double\" -- a comment\n",
    "SELECT 1 # a comment",
    # MariaDB's table value constructor (issue #31): a read
    "VALUES (1), (2)",
    "VALUES (1, 'a'), (2, 'b') ORDER BY 1 DESC LIMIT 1",
    "SELECT * FROM (VALUES (1), (2)) AS v",
    "WITH v AS (VALUES (1), (2)) SELECT * FROM v",
    "VALUES (1), (2) UNION ALL VALUES (3)",
)
