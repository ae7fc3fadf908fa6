"""Decide whether a SQL text is one plain read statement, with a real SQL parser (sqlglot, postgres).

This is the first of two independent defences for free-form SQL; the second is that the statement
runs in a ``READ ONLY`` transaction inside a cursor declaration anyway (``connectors.database``).
The guard fails closed: anything sqlglot cannot parse is refused.

Accepted: exactly one ``SELECT``, set operation (``UNION``/``INTERSECT``/``EXCEPT``) or ``VALUES``,
optionally with ``WITH`` clauses that are themselves reads. Refused anywhere in the tree: data
changes and DDL (including writable CTEs), ``SELECT ... INTO``, row locks (``FOR UPDATE``/``SHARE``),
and every statement sqlglot only knows as a generic command (``EXPLAIN``, ``COPY``, ``CALL``, ``DO``,
``SET``, ``LOCK``, ``VACUUM``, ``PREPARE``...).

Functions: a *denylist* of PostgreSQL functions with side effects or privileged reach (session
settings, sequences, large objects, server files, advisory locks, backend signals, replication,
``dblink``, functions that run SQL given as a string, sleeping). A denylist cannot know user-defined
functions; those are left to the READ ONLY transaction and to a SELECT-only database role, which
the README recommends for read connectors. Function names must also be plain identifiers, so
Unicode-escaped names (``U&"\\0073et_config"``) cannot smuggle a denied function past the list.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

MAX_SQL_CHARS = 100_000


class _DropStatementEcho(logging.Filter):
    """sqlglot logs the statement text when it falls back to a generic command; SQL is a tool payload."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "contains unsupported syntax" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_DropStatementEcho())

DENIED_FUNCTIONS = frozenset(
    {
        "set_config",
        "setseed",
        "nextval",
        "setval",
        "lo_import",
        "lo_export",
        "loread",
        "lowrite",
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_promote",
        "pg_switch_wal",
        "pg_export_snapshot",
        "pg_notify",
        "pg_import_system_collations",
        "pg_log_backend_memory_contexts",
        "pg_stat_file",
        "pg_current_xact_id",
        "txid_current",
        "gin_clean_pending_list",
        "pg_prewarm",
        "pg_truncate_visibility_map",
    }
)
DENIED_FUNCTION_PREFIXES = (
    "lo_",
    "dblink",
    "pg_read_",
    "pg_ls_",
    "pg_file_",
    "pg_sleep",
    "pg_advisory",
    "pg_try_advisory",
    "pg_terminate_",
    "pg_cancel_",
    "pg_stat_reset",
    "pg_stat_statements_reset",
    "pg_create_",
    "pg_drop_",
    "pg_copy_",
    "pg_replication_",
    "pg_logical_",
    "pg_wal_replay_",
    "pg_backup_",
    "pg_start_backup",
    "pg_stop_backup",
    "brin_summarize",
    "brin_desummarize",
)

_TEMPLATE_TOKEN = re.compile(r"%%|%\(\w+\)s")
_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_$]*$")
_ROOT_TYPES: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)


def _node_types(*names: str) -> tuple[type[exp.Expression], ...]:
    return tuple(t for t in (getattr(exp, n, None) for n in names) if isinstance(t, type))


# Node type -> what it means, checked in this order ("{key}" is the node's statement keyword).
_FORBIDDEN_NODES: tuple[tuple[tuple[type[exp.Expression], ...], str], ...] = (
    (_node_types("DML"), "{key} changes data"),
    (
        _node_types("DDL", "Drop", "Alter", "TruncateTable", "Comment", "Grant", "Revoke"),
        "{key} changes the schema",
    ),
    (_node_types("Into"), "SELECT ... INTO creates a table"),
    (_node_types("Lock"), "SELECT ... FOR UPDATE/SHARE locks rows"),
    (_node_types("Command"), "{key} is a command, not a query"),
    (
        _node_types("Set", "SetItem", "Transaction", "Commit", "Rollback"),
        "{key} changes session or transaction state",
    ),
    (_node_types("NextValueFor"), "NEXT VALUE FOR advances a sequence"),
)
_KEYWORDS = {"truncatetable": "TRUNCATE", "transaction": "BEGIN", "setitem": "SET"}


@dataclass(frozen=True, slots=True)
class SqlVerdict:
    """Whether the SQL is exactly one plain read statement, and if not, why not."""

    is_single_read: bool
    reason: str
    statement_count: int


def _refuse(reason: str, count: int = 0) -> SqlVerdict:
    return SqlVerdict(is_single_read=False, reason=reason, statement_count=count)


def _statement_label(root: exp.Expression) -> str:
    if isinstance(root, exp.Command):
        return str(root.this).upper()[:20] or "the statement"
    if isinstance(root, exp.Alias | exp.Column | exp.Identifier):  # an unknown keyword parsed as a name
        return "the statement"
    return _KEYWORDS.get(root.key, root.key.upper())


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _function_problem(node: exp.Func) -> str | None:
    name = _function_name(node)
    if not _PLAIN_NAME.match(name):
        return f"calls a function with an unusual name ({name[:40]!r})"
    if name in DENIED_FUNCTIONS or name.startswith(DENIED_FUNCTION_PREFIXES):
        return f"calls {name}(), which has side effects or privileged access"
    return None


def _tree_problem(root: exp.Expression) -> str | None:
    for node in root.walk():
        for types, meaning in _FORBIDDEN_NODES:
            if types and isinstance(node, types):
                return meaning.format(key=_statement_label(node))
        if isinstance(node, exp.Func):
            problem = _function_problem(node)
            if problem:
                return problem
    return None


def _parse(sql: str) -> list[exp.Expression]:
    statements = sqlglot.parse(sql, read="postgres")
    # A bare ``;`` (or one holding only comments) parses as an empty Semicolon statement.
    return [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]


def classify_sql(sql: str) -> SqlVerdict:
    """Parse ``sql`` (PostgreSQL dialect) and decide whether it is one plain read statement.

    ``sql`` is judged exactly as the database will receive it (free-form SQL is sent without
    parameters, so no placeholder is interpreted).
    """
    if not isinstance(sql, str) or not sql.strip():
        return _refuse("empty SQL")
    if len(sql) > MAX_SQL_CHARS:
        return _refuse(f"SQL longer than {MAX_SQL_CHARS} characters")
    if "\x00" in sql:
        return _refuse("SQL contains a NUL character")
    try:
        statements = _parse(sql)
    except (SqlglotError, RecursionError, ValueError, TypeError):
        return _refuse("the SQL could not be parsed")
    count = len(statements)
    if count != 1:
        return _refuse(f"expected exactly one statement, found {count}", count)
    root = statements[0]
    if not isinstance(root, _ROOT_TYPES):
        return _refuse(
            f"{_statement_label(root)} is not a read query (only SELECT, VALUES or WITH ... SELECT)", 1
        )
    problem = _tree_problem(root)
    if problem:
        return _refuse(problem, 1)
    return SqlVerdict(is_single_read=True, reason="one plain read statement", statement_count=1)


def template_as_sent(sql_template: str) -> str:
    """An action template as psycopg sends it: ``%(name)s`` become ``$1`` parameters, ``%%`` is ``%``."""
    return _TEMPLATE_TOKEN.sub(lambda m: "%" if m.group(0) == "%%" else "$1", sql_template)


def is_write_sql(sql: str) -> bool:
    """Whether a SQL action template (``%(name)s`` placeholders) must be treated as a write.

    Anything but one plain read statement counts as a write.
    """
    return not classify_sql(template_as_sent(sql)).is_single_read
