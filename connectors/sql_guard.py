"""Decide whether a SQL text is one plain read statement, with a real SQL parser (sqlglot, postgres).

This is the first of two independent defences for free-form SQL; the second is that the statement
runs in a ``READ ONLY`` transaction inside a cursor declaration anyway (``connectors.database``).
The guard fails closed: anything sqlglot cannot parse is refused.

Accepted: exactly one ``SELECT``, set operation (``UNION``/``INTERSECT``/``EXCEPT``) or ``VALUES``,
optionally with ``WITH`` clauses that are themselves reads. Refused anywhere in the tree: data
changes and DDL (including writable CTEs), ``SELECT ... INTO``, row locks (``FOR UPDATE``/``SHARE``),
and every statement sqlglot only knows as a generic command (``EXPLAIN``, ``COPY``, ``CALL``, ``DO``,
``SET``, ``LOCK``, ``VACUUM``, ``PREPARE``...).

Functions: an *allow list* (:data:`connectors.sql_functions.ALLOWED_FUNCTIONS`) of PostgreSQL built-ins that only compute a
value from their arguments or read the statement's own data (aggregates, window functions, string,
math, date/time, JSON, array, range and text-search functions, casts, a few catalogue lookups).
Every other call is refused with its name. An allow list, because a deny list has to know every
function that runs SQL given as a string (``ts_stat``, ``ts_rewrite``, ``query_to_xml``...), takes
locks, changes settings or signals other sessions, in every server version and extension, and one
missing name is a hole; an allow list's mistakes only refuse a read. It also refuses user-defined
functions, whose effects no parser can know. A name counts only as PostgreSQL resolves it: unquoted,
and unqualified or in ``pg_catalog`` (``public.lower()`` or ``"LOWER"()`` may be anyone's function).
The list is code, not configuration: neither an organisation admin nor the operator extends it at
run time (a wrong entry would reopen the hole for every tenant); a function of one's own belongs in
a templated action, and adding a built-in to the list is a reviewed change with a corpus test.

Constructs the parser knows as syntax rather than a call by name (``CASE``, ``CAST``, ``::``,
``EXTRACT``, ``->>``, ``@>``, ``ARRAY[...]``) are accepted only from :data:`_SYNTAX_NODES`; the
parser is narrowed so that names other dialects parse as syntax (``IF``, ``ARGMAX``...) arrive
as calls and meet the allow list. What the statement reaches through the database's own objects
(views, operators, types and casts, ``row.function`` notation) is the schema owner's code and is
left to the READ ONLY transaction and a SELECT-only role, which the README requires for read
connectors. A MySQL adapter brings its own dialect and allow list to the same checks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from connectors.sql_functions import ALLOWED_FUNCTIONS

MAX_SQL_CHARS = 100_000


class _DropStatementEcho(logging.Filter):
    """sqlglot logs the statement text when it falls back to a generic command; SQL is a tool payload."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "contains unsupported syntax" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_DropStatementEcho())


class _GuardPostgres(Postgres):
    """PostgreSQL as sqlglot reads it, minus other dialects' special function syntax.

    sqlglot parses some names with their own grammar and then keeps no trace of the name; only
    the constructs PostgreSQL itself reserves keep that treatment, so every other name stays a
    call whose name the allow list checks.
    """

    class Parser(Postgres.Parser):
        FUNCTION_PARSERS = {
            k: v
            for k, v in Postgres.Parser.FUNCTION_PARSERS.items()
            if k in {"CAST", "EXTRACT", "OVERLAY", "POSITION", "SUBSTRING", "TRIM", "NORMALIZE"}
        }
        NO_PAREN_FUNCTION_PARSERS = {
            k: v
            for k, v in Postgres.Parser.NO_PAREN_FUNCTION_PARSERS.items()
            if k in {"ANY", "CASE", "VARIADIC"}
        }


_DIALECT = _GuardPostgres()

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
# Calls made by syntax, not by a name (CASE, CAST and ::, EXTRACT, ->>, @>, ARRAY[...], CURRENT_DATE...).
_SYNTAX_NODES: frozenset[type[exp.Expression]] = frozenset(
    _node_types(
        "And",
        "Or",
        "Xor",
        "Case",
        "Cast",
        "Collate",
        "Array",
        "Exists",
        "Unnest",
        "Extract",
        "Overlay",
        "StrPosition",
        "Substring",
        "Trim",
        "Normalize",
        "CurrentDate",
        "CurrentTime",
        "CurrentTimestamp",
        "CurrentUser",
        "CurrentSchema",
        "CurrentCatalog",
        "CurrentRole",
        "SessionUser",
        "Localtime",
        "Localtimestamp",
        "JSONExtract",
        "JSONExtractScalar",
        "JSONBExtract",
        "JSONBExtractScalar",
        "JSONBContains",
        "JSONBContainsTopKey",
        "JSONBContainsAnyTopKeys",
        "JSONBContainsAllTopKeys",
        "JSONBDeleteAtPath",
        "ArrayContainsAll",
        "ArrayContainedBy",
        "ArrayOverlaps",
        "MatchAgainst",
        "RegexpLike",
        "RegexpILike",
    )
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


class _Tokens:
    """The statement's tokens, found by where they start: a parsed call keeps its name's position."""

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self._index = {t.start: i for i, t in enumerate(tokens)}

    def called_name(self, node: exp.Func) -> tuple[Token, str | None] | None:
        """The token naming ``node`` and its schema (``None`` when unqualified), if it was a call."""
        index = self._index.get(node.meta.get("start", -1))
        if index is None:
            return None
        if index < 1 or self._tokens[index - 1].token_type != TokenType.DOT:
            return self._tokens[index], None
        parts = []
        at = index - 2
        while at >= 0:
            parts.insert(0, _identifier_text(self._tokens[at]))
            if at < 1 or self._tokens[at - 1].token_type != TokenType.DOT:
                break
            at -= 2
        return self._tokens[index], ".".join(parts) or "?"

    def qualified_call_problem(self) -> str | None:
        """A ``schema.name(`` anywhere that is not ``pg_catalog``: in PostgreSQL that is always a call."""
        tokens = self._tokens
        for i in range(2, len(tokens) - 1):
            if tokens[i + 1].token_type == TokenType.L_PAREN and tokens[i - 1].token_type == TokenType.DOT:
                schema = _identifier_text(tokens[i - 2])
                if schema != "pg_catalog" or (i > 2 and tokens[i - 3].token_type == TokenType.DOT):
                    name = _identifier_text(tokens[i])[:40]
                    return (
                        f"calls {schema[:40]}.{name}(); only built-in functions"
                        " (unqualified or pg_catalog) are allowed"
                    )
        return None


def _identifier_text(token: Token) -> str:
    return token.text if token.token_type == TokenType.IDENTIFIER else token.text.lower()


def _syntax_problem(node: exp.Func) -> str | None:
    if type(node) in _SYNTAX_NODES or (isinstance(node, exp.If) and isinstance(node.parent, exp.Case)):
        return None
    if isinstance(node, exp.Anonymous):
        return "calls a function the SQL guard could not identify"
    return f"uses {node.key.upper()} syntax, which the SQL guard does not allow"


def _function_problem(node: exp.Func, tokens: _Tokens) -> str | None:
    called = tokens.called_name(node)
    if called is None:
        return _syntax_problem(node)
    token, schema = called
    if token.token_type == TokenType.IDENTIFIER:
        return f"calls a function by a quoted name ({token.text[:40]!r}); write function names without quotes"
    name = token.text.lower()
    if not _PLAIN_NAME.match(name):
        return f"calls a function with an unusual name ({name[:40]!r})"
    if schema is not None and schema != "pg_catalog":
        return (
            f"calls {schema[:40]}.{name}(); only built-in functions (unqualified or pg_catalog) are allowed"
        )
    if name not in ALLOWED_FUNCTIONS:
        return f"calls {name}(), which is not on the SQL guard's list of allowed read functions"
    return None


def _tree_problem(root: exp.Expression, tokens: _Tokens) -> str | None:
    qualified = tokens.qualified_call_problem()
    if qualified:
        return qualified
    for node in root.walk():
        for types, meaning in _FORBIDDEN_NODES:
            if types and isinstance(node, types):
                return meaning.format(key=_statement_label(node))
        if isinstance(node, exp.Func):
            problem = _function_problem(node, tokens)
            if problem:
                return problem
    return None


def _parse(sql: str) -> tuple[list[exp.Expression], _Tokens]:
    tokens = _DIALECT.tokenize(sql)
    statements = _DIALECT.parser().parse(tokens, sql)
    # A bare ``;`` (or one holding only comments) parses as an empty Semicolon statement.
    kept = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    return kept, _Tokens(tokens)


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
        statements, tokens = _parse(sql)
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
    problem = _tree_problem(root, tokens)
    if problem:
        return _refuse(problem, 1)
    return SqlVerdict(is_single_read=True, reason="one plain read statement", statement_count=1)


def without_trailing_semicolons(sql: str) -> str:
    """``sql`` without the ``;`` (and comments) after its last token, so it can stand in parentheses."""
    if ";" not in sql:
        return sql
    try:
        tokens = _DIALECT.tokenize(sql)
    except (SqlglotError, RecursionError, ValueError, TypeError):
        return sql  # the database reports what is wrong with it
    end = len(tokens)
    while end and tokens[end - 1].token_type == TokenType.SEMICOLON:
        end -= 1
    if end in (0, len(tokens)):
        return sql
    return sql[: tokens[end - 1].end + 1]


def template_as_sent(sql_template: str) -> str:
    """An action template as psycopg sends it: ``%(name)s`` become ``$1`` parameters, ``%%`` is ``%``."""
    return _TEMPLATE_TOKEN.sub(lambda m: "%" if m.group(0) == "%%" else "$1", sql_template)


def is_write_sql(sql: str) -> bool:
    """Whether a SQL action template (``%(name)s`` placeholders) must be treated as a write.

    Anything but one plain read statement counts as a write.
    """
    return not classify_sql(template_as_sent(sql)).is_single_read
