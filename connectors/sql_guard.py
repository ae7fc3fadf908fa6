"""Decide whether a SQL text is one plain read statement, with a real SQL parser (sqlglot, postgres).

This is the first of two independent defences for free-form SQL; the second is that the statement
runs in a ``READ ONLY`` transaction inside a cursor declaration anyway (``connectors.database``).
The guard fails closed: anything sqlglot cannot parse is refused.

Accepted: exactly one ``SELECT``, set operation (``UNION``/``INTERSECT``/``EXCEPT``) or ``VALUES``,
optionally with ``WITH`` clauses that are themselves reads. Refused anywhere in the tree: data
changes and DDL (including writable CTEs), ``SELECT ... INTO``, row locks (``FOR UPDATE``/``SHARE``),
and every statement sqlglot only knows as a generic command (``EXPLAIN``, ``COPY``, ``CALL``, ``DO``,
``SET``, ``LOCK``, ``VACUUM``, ``PREPARE``...).

Functions: an *allow list* (:data:`ALLOWED_FUNCTIONS`) of PostgreSQL built-ins that only compute a
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

MAX_SQL_CHARS = 100_000


class _DropStatementEcho(logging.Filter):
    """sqlglot logs the statement text when it falls back to a generic command; SQL is a tool payload."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "contains unsupported syntax" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_DropStatementEcho())


def _names(*groups: str) -> frozenset[str]:
    return frozenset(name for group in groups for name in group.split())


ALLOWED_FUNCTIONS: frozenset[str] = _names(
    # aggregates
    """count sum avg min max array_agg string_agg json_agg jsonb_agg json_object_agg jsonb_object_agg
    bool_and bool_or every bit_and bit_or bit_xor stddev stddev_pop stddev_samp variance var_pop
    var_samp corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2
    regr_slope regr_sxx regr_sxy regr_syy percentile_cont percentile_disc mode range_agg
    range_intersect_agg grouping""",
    # window functions
    """row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value""",
    # conditionals and comparison
    "coalesce nullif greatest least num_nulls num_nonnulls",
    # math
    """abs cbrt ceil ceiling degrees div exp factorial floor gcd lcm ln log log10 min_scale mod pi
    power pow radians round scale sign sqrt trim_scale trunc width_bucket random acos asin atan atan2
    cos cot sin tan sinh cosh tanh asinh acosh atanh acosd asind atand atan2d cosd cotd sind tand""",
    # strings and binary strings
    """ascii bit_length btrim char_length character_length chr concat concat_ws format initcap left
    length lower lpad ltrim md5 normalize octet_length overlay position quote_ident quote_literal
    quote_nullable regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace
    regexp_split_to_array regexp_split_to_table regexp_substr repeat replace reverse right rpad rtrim
    split_part starts_with string_to_array string_to_table strpos substr substring to_ascii to_hex
    translate trim unistr upper sha224 sha256 sha384 sha512 encode decode convert_from get_bit
    get_byte to_char to_number""",
    # date and time
    """age clock_timestamp date_add date_bin date_part date_subtract date_trunc extract isfinite
    justify_days justify_hours justify_interval make_date make_interval make_time make_timestamp
    make_timestamptz now statement_timestamp timeofday transaction_timestamp to_timestamp to_date
    timezone""",
    # JSON
    """to_json to_jsonb array_to_json row_to_json json_build_array jsonb_build_array
    json_build_object jsonb_build_object json_object jsonb_object json_array_length
    jsonb_array_length json_each jsonb_each json_each_text jsonb_each_text json_extract_path
    jsonb_extract_path json_extract_path_text jsonb_extract_path_text json_object_keys
    jsonb_object_keys json_populate_record jsonb_populate_record json_populate_recordset
    jsonb_populate_recordset json_to_record jsonb_to_record json_to_recordset jsonb_to_recordset
    json_strip_nulls jsonb_strip_nulls jsonb_set jsonb_set_lax jsonb_insert jsonb_pretty json_typeof
    jsonb_typeof jsonb_path_exists jsonb_path_match jsonb_path_query jsonb_path_query_array
    jsonb_path_query_first json_array_elements jsonb_array_elements json_array_elements_text
    jsonb_array_elements_text jsonb_exists""",
    # arrays, ranges, set-returning
    """array_append array_cat array_dims array_fill array_length array_lower array_ndims
    array_position array_positions array_prepend array_remove array_replace array_to_string
    array_upper cardinality trim_array unnest generate_series generate_subscripts isempty lower_inc
    upper_inc lower_inf upper_inf range_merge int4range int8range numrange tsrange tstzrange daterange""",
    # full-text search (not ts_stat or ts_rewrite: they run SQL given as text)
    """to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank
    ts_rank_cd ts_headline setweight strip numnode querytree tsvector_to_array array_to_tsvector
    ts_delete ts_filter""",
    # network addresses, uuids
    "host hostmask network netmask masklen family broadcast abbrev set_masklen inet_merge gen_random_uuid",
    # the session and the catalogue, read-only
    """current_database current_schema current_schemas current_setting version pg_typeof
    format_type obj_description col_description pg_get_viewdef pg_get_constraintdef pg_get_indexdef
    pg_size_pretty pg_relation_size pg_total_relation_size pg_table_size pg_indexes_size to_regclass
    to_regtype has_table_privilege has_column_privilege has_schema_privilege""",
    # function-style casts and keywords the parser reads as calls
    "date text int4 int8 float8 numeric row array all any some",
)


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


def template_as_sent(sql_template: str) -> str:
    """An action template as psycopg sends it: ``%(name)s`` become ``$1`` parameters, ``%%`` is ``%``."""
    return _TEMPLATE_TOKEN.sub(lambda m: "%" if m.group(0) == "%%" else "$1", sql_template)


def is_write_sql(sql: str) -> bool:
    """Whether a SQL action template (``%(name)s`` placeholders) must be treated as a write.

    Anything but one plain read statement counts as a write.
    """
    return not classify_sql(template_as_sent(sql)).is_single_read
