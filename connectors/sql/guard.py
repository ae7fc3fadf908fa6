"""Decide whether a SQL text is one plain read statement, with a real SQL parser (sqlglot, postgres).

This is the first of two independent defences for free-form SQL; the second is that the statement
runs in a ``READ ONLY`` transaction inside a cursor declaration anyway (``connectors.sql.adapter``).
The guard fails closed: anything sqlglot cannot parse is refused.

Accepted: exactly one ``SELECT``, set operation (``UNION``/``INTERSECT``/``EXCEPT``) or ``VALUES``,
optionally with ``WITH`` clauses that are themselves reads. Refused anywhere in the tree: data
changes and DDL (including writable CTEs), ``SELECT ... INTO``, row locks (``FOR UPDATE``/``SHARE``),
and every statement sqlglot only knows as a generic command (``EXPLAIN``, ``COPY``, ``CALL``, ``DO``,
``SET``, ``LOCK``, ``VACUUM``, ``PREPARE``...).

Functions: an *allow list* (:data:`connectors.sql.functions.ALLOWED_FUNCTIONS`) of PostgreSQL built-ins that only compute a
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
connectors.

MySQL and MariaDB (``engine="mysql"``) go through the same checks with sqlglot's MySQL dialect and
their own allow list (:data:`connectors.sql.functions.MYSQL_ALLOWED_FUNCTIONS`); there no call may be
qualified (``db.f()`` is a stored function), and the guard also refuses what only MySQL has: comments
the server executes (``/*! ... */``, ``/*M! ... */``) or reads as optimizer hints (``/*+ ... */``,
whose ``SET_VAR`` could lift the statement timeout), ``SELECT ... INTO OUTFILE/DUMPFILE`` and user
variable assignments (``@v := ...``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from connectors.sql.functions import ALLOWED_FUNCTIONS, MYSQL_ALLOWED_FUNCTIONS

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

    class Parser(Postgres.Parser):  # type: ignore[valid-type,misc]  # sqlglot assigns Parser as a class variable
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


class _GuardMySQL(MySQL):
    """MySQL as sqlglot reads it, narrowed like :class:`_GuardPostgres` to MySQL's own syntax.

    ``VALUES`` is not a function here: sqlglot reads ``VALUES (1), (2)`` as MySQL's ``VALUES(col)`` of
    ``INSERT ... ON DUPLICATE KEY UPDATE`` (a write, refused anyway) and fails on the second row, so
    MariaDB's table value constructor, a read, was refused.
    """

    class Parser(MySQL.Parser):  # type: ignore[valid-type,misc]  # sqlglot assigns Parser as a class variable
        FUNC_TOKENS = MySQL.Parser.FUNC_TOKENS - {TokenType.VALUES}
        FUNCTION_PARSERS = {
            k: v
            for k, v in MySQL.Parser.FUNCTION_PARSERS.items()
            if k
            in {
                "CAST",
                "CONVERT",
                "EXTRACT",
                "POSITION",
                "SUBSTRING",
                "TRIM",
                "GROUP_CONCAT",
                "CHAR",
                "MATCH",
            }
        }
        NO_PAREN_FUNCTION_PARSERS = {
            k: v for k, v in MySQL.Parser.NO_PAREN_FUNCTION_PARSERS.items() if k in {"ANY", "CASE"}
        }


@dataclass(frozen=True, slots=True)
class _Engine:
    """What the guard needs to know of one SQL dialect."""

    dialect: Dialect
    allowed_functions: frozenset[str]
    builtin_schema: str | None  # the schema a built-in may be qualified with (None: no qualified calls)
    syntax_nodes: frozenset[type[exp.Expression]] = frozenset()  # besides _SYNTAX_NODES


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

ENGINES: dict[str, _Engine] = {
    "postgresql": _Engine(_DIALECT, ALLOWED_FUNCTIONS, "pg_catalog"),
    "mysql": _Engine(
        _GuardMySQL(),
        MYSQL_ALLOWED_FUNCTIONS,
        None,
        # Nodes the MySQL dialect builds from syntax or around a named call's arguments.
        frozenset(
            _node_types(
                "GroupConcat", "Chr", "TsOrDsToTimestamp", "TsOrDsToDate", "Interval", "CurrentDatetime"
            )
        ),
    ),
}
# Comments MySQL executes (/*! */, MariaDB's /*M! */) or reads as optimizer hints (/*+ */).
_MYSQL_LIVE_COMMENT = re.compile(r"/\*(?:[mM]?!|\+)")
_MYSQL_FILE_TARGETS = frozenset({"OUTFILE", "DUMPFILE"})
_MYSQL_FORBIDDEN_NODES: tuple[tuple[tuple[type[exp.Expression], ...], str], ...] = (
    (_node_types("PropertyEQ"), "assigns a user variable (:=)"),
    (_node_types("Into"), "SELECT ... INTO stores the result in variables or a table"),
)
# Statements MySQL has and sqlglot may not parse: named at once rather than as a parse failure.
_MYSQL_COMMANDS = frozenset(
    """HANDLER DO CALL SET LOAD LOCK UNLOCK FLUSH KILL INSTALL UNINSTALL SHUTDOWN RENAME REPLACE PURGE
    RESET CHANGE START STOP XA BINLOG CACHE CHECKSUM OPTIMIZE REPAIR ANALYZE PREPARE EXECUTE DEALLOCATE
    BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE GRANT REVOKE CREATE ALTER DROP TRUNCATE INSERT UPDATE DELETE
    SIGNAL RESIGNAL GET USE""".split()
)


MYSQL_ENGINES = frozenset({"mysql", "mariadb"})


def guard_family(engine: str) -> str:
    """The guard's dialect for a connector engine: ``mysql`` for MySQL and MariaDB, else ``postgresql``."""
    return "mysql" if engine in MYSQL_ENGINES else "postgresql"


def _engine(name: str) -> _Engine:
    return ENGINES[guard_family(name)]


@dataclass(frozen=True, slots=True)
class SqlVerdict:
    """Whether the SQL is exactly one plain read statement, and if not, why not."""

    is_single_read: bool
    reason: str
    statement_count: int


def _refuse(reason: str, count: int = 0) -> SqlVerdict:
    return SqlVerdict(is_single_read=False, reason=reason, statement_count=count)


def _statement_label(root: exp.Expr) -> str:
    if isinstance(root, exp.Command):
        return str(root.this).upper()[:20] or "the statement"
    if isinstance(root, exp.Alias | exp.Column | exp.Identifier):  # an unknown keyword parsed as a name
        return "the statement"
    return _KEYWORDS.get(root.key, root.key.upper())


class _Tokens:
    """The statement's tokens, found by where they start: a parsed call keeps its name's position."""

    def __init__(self, tokens: list[Token], builtin_schema: str | None = "pg_catalog") -> None:
        self._tokens = tokens
        self._builtin_schema = builtin_schema
        self._index = {t.start: i for i, t in enumerate(tokens)}

    def called_name(self, node: exp.Func) -> tuple[Token, str | None] | None:
        """The token naming ``node`` and its schema (``None`` when unqualified), if it was a call."""
        index = self._index.get(node.meta.get("start", -1))
        if index is None:
            return None
        if index < 1 or self._tokens[index - 1].token_type != TokenType.DOT:
            return self._tokens[index], None
        parts: list[str] = []
        at = index - 2
        while at >= 0:
            parts.insert(0, _identifier_text(self._tokens[at]))
            if at < 1 or self._tokens[at - 1].token_type != TokenType.DOT:
                break
            at -= 2
        return self._tokens[index], ".".join(parts) or "?"

    def qualified_call_problem(self) -> str | None:
        """A ``schema.name(`` anywhere outside the built-ins' schema: in PostgreSQL (and MySQL) always a call."""
        tokens = self._tokens
        for i in range(2, len(tokens) - 1):
            if tokens[i + 1].token_type == TokenType.L_PAREN and tokens[i - 1].token_type == TokenType.DOT:
                schema = _identifier_text(tokens[i - 2])
                if schema != self._builtin_schema or (i > 2 and tokens[i - 3].token_type == TokenType.DOT):
                    name = _identifier_text(tokens[i])[:40]
                    return f"calls {schema[:40]}.{name}(); {_builtins_only(self._builtin_schema)}"
        return None

    def mysql_problem(self) -> str | None:
        """``INTO OUTFILE``/``INTO DUMPFILE``, found by their tokens (the parser does not know them)."""
        if self._tokens and self._tokens[0].text.upper() in _MYSQL_COMMANDS:
            return (
                f"{self._tokens[0].text.upper()} is not a read query (only SELECT, VALUES or WITH ... SELECT)"
            )
        for before, token in zip(self._tokens, self._tokens[1:], strict=False):
            if before.text.upper() == "INTO" and token.text.upper() in _MYSQL_FILE_TARGETS:
                return f"SELECT ... INTO {token.text.upper()} writes a file on the server"
        return None


def _builtins_only(builtin_schema: str | None) -> str:
    if builtin_schema is None:
        return "only built-in functions (unqualified) are allowed"
    return f"only built-in functions (unqualified or {builtin_schema}) are allowed"


def _identifier_text(token: Token) -> str:
    return token.text if token.token_type == TokenType.IDENTIFIER else token.text.lower()


def _syntax_problem(node: exp.Func, engine: _Engine) -> str | None:
    if (
        type(node) in _SYNTAX_NODES
        or type(node) in engine.syntax_nodes
        or (isinstance(node, exp.If) and isinstance(node.parent, exp.Case))
    ):
        return None
    if isinstance(node, exp.Anonymous):
        return "calls a function the SQL guard could not identify"
    return f"uses {node.key.upper()} syntax, which the SQL guard does not allow"


def _function_problem(node: exp.Func, tokens: _Tokens, engine: _Engine) -> str | None:
    called = tokens.called_name(node)
    if called is None:
        return _syntax_problem(node, engine)
    token, schema = called
    if token.token_type == TokenType.IDENTIFIER:
        return f"calls a function by a quoted name ({token.text[:40]!r}); write function names without quotes"
    name = token.text.lower()
    if not _PLAIN_NAME.match(name):
        return f"calls a function with an unusual name ({name[:40]!r})"
    if schema is not None and schema != engine.builtin_schema:
        return f"calls {schema[:40]}.{name}(); {_builtins_only(engine.builtin_schema)}"
    if name not in engine.allowed_functions:
        return f"calls {name}(), which is not on the SQL guard's list of allowed read functions"
    return None


def _tree_problem(root: exp.Expression, tokens: _Tokens, engine: _Engine) -> str | None:
    qualified = tokens.qualified_call_problem()
    if qualified:
        return qualified
    forbidden = (_MYSQL_FORBIDDEN_NODES if engine is ENGINES["mysql"] else ()) + _FORBIDDEN_NODES
    for node in root.walk():
        for types, meaning in forbidden:
            if types and isinstance(node, types):
                return meaning.format(key=_statement_label(node))
        if isinstance(node, exp.Func):
            problem = _function_problem(node, tokens, engine)
            if problem:
                return problem
    return None


def _parse(sql: str, engine: _Engine) -> tuple[list[exp.Expr], _Tokens]:
    tokens = engine.dialect.tokenize(sql)
    statements = engine.dialect.parser().parse(tokens, sql)
    # A bare ``;`` (or one holding only comments) parses as an empty Semicolon statement.
    kept = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    return kept, _Tokens(tokens, engine.builtin_schema)


def _mysql_text_problem(sql: str, engine: _Engine) -> str | None:
    if engine is not ENGINES["mysql"]:
        return None
    if _MYSQL_LIVE_COMMENT.search(sql):
        return "contains a /*! */, /*M! */ or /*+ */ comment, which MySQL executes or obeys; remove it"
    try:
        return _Tokens(engine.dialect.tokenize(sql), None).mysql_problem()
    except (SqlglotError, RecursionError, ValueError, TypeError):
        return None  # the parser refuses it next


def classify_sql(sql: str, *, engine: str = "postgresql") -> SqlVerdict:
    """Parse ``sql`` (in the dialect of ``engine``: ``postgresql`` or ``mysql``) and decide whether it
    is one plain read statement.

    ``sql`` is judged exactly as the database will receive it (free-form SQL is sent without
    parameters, so no placeholder is interpreted).
    """
    rules = _engine(engine)
    if not isinstance(sql, str) or not sql.strip():
        return _refuse("empty SQL")
    if len(sql) > MAX_SQL_CHARS:
        return _refuse(f"SQL longer than {MAX_SQL_CHARS} characters")
    if "\x00" in sql:
        return _refuse("SQL contains a NUL character")
    text_problem = _mysql_text_problem(sql, rules)
    if text_problem:
        return _refuse(text_problem)
    try:
        statements, tokens = _parse(sql, rules)
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
    problem = _tree_problem(root, tokens, rules)
    if problem:
        return _refuse(problem, 1)
    return SqlVerdict(is_single_read=True, reason="one plain read statement", statement_count=1)


def without_trailing_semicolons(sql: str, *, engine: str = "postgresql") -> str:
    """``sql`` without the ``;`` (and comments) after its last token, so it can stand in parentheses."""
    if ";" not in sql:
        return sql
    try:
        tokens = _engine(engine).dialect.tokenize(sql)
    except (SqlglotError, RecursionError, ValueError, TypeError):
        return sql  # the database reports what is wrong with it
    end = len(tokens)
    while end and tokens[end - 1].token_type == TokenType.SEMICOLON:
        end -= 1
    if end in (0, len(tokens)):
        return sql
    return sql[: tokens[end - 1].end + 1]


def template_as_sent(sql_template: str, *, engine: str = "postgresql") -> str:
    """An action template as the driver sends it: ``%(name)s`` become parameters (``$1`` for psycopg;
    for MySQL a literal the driver escapes, judged as a ``?``), ``%%`` is ``%``."""
    placeholder = "?" if guard_family(engine) == "mysql" else "$1"
    return _TEMPLATE_TOKEN.sub(lambda m: "%" if m.group(0) == "%%" else placeholder, sql_template)


def is_write_sql(sql: str, *, engine: str = "postgresql") -> bool:
    """Whether a SQL action template (``%(name)s`` placeholders) must be treated as a write.

    Anything but one plain read statement counts as a write.
    """
    return not classify_sql(template_as_sent(sql, engine=engine), engine=engine).is_single_read
