"""The PostgreSQL functions free-form SQL may call: built-ins that only compute a value or read.

Reviewed by hand, never configured (``connectors.sql.guard`` says why an allow list). A name is
here only when every overload of it in ``pg_catalog`` computes its result from its arguments, the
statement's rows or the read-only catalogue: no function that runs SQL given as text (``ts_stat``,
``ts_rewrite``, ``query_to_xml``, ``table_to_xml``...), takes locks, changes settings, sequences or
large objects, sleeps, reads server files, or reaches other sessions. Adding a name is a change
with a test in ``tests/connectors/sql/write_corpus.py``.
"""

from __future__ import annotations


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


# MySQL and MariaDB built-ins on the same terms. Not here, among others: sleep, benchmark, load_file,
# get_lock and the other lock functions, master_pos_wait/source_pos_wait, last_insert_id,
# found_rows, row_count, sys_eval-style UDFs, and every function whose name only a plugin defines.
MYSQL_ALLOWED_FUNCTIONS: frozenset[str] = _names(
    # aggregates and window functions
    """count sum avg min max group_concat bit_and bit_or bit_xor std stddev stddev_pop stddev_samp
    variance var_pop var_samp json_arrayagg json_objectagg row_number rank dense_rank percent_rank
    cume_dist ntile lag lead first_value last_value nth_value""",
    # conditionals and comparison
    "coalesce ifnull nullif if isnull greatest least interval strcmp",
    # math
    """abs ceil ceiling floor round truncate mod pow power sqrt exp ln log log2 log10 sign pi degrees
    radians sin cos tan asin acos atan atan2 cot rand crc32 conv""",
    # strings
    """ascii bin bit_length char char_length character_length concat concat_ws elt field find_in_set
    format hex insert instr lcase left length locate lower lpad ltrim make_set mid oct octet_length
    ord position quote regexp_instr regexp_like regexp_replace regexp_substr repeat replace reverse
    right rpad rtrim soundex space substr substring substring_index trim ucase unhex upper md5 sha sha1
    sha2 to_base64 from_base64""",
    # date and time
    """adddate addtime convert_tz curdate current_date current_time current_timestamp curtime date
    date_add date_format date_sub datediff day dayname dayofmonth dayofweek dayofyear extract
    from_days from_unixtime get_format hour last_day localtime localtimestamp makedate maketime
    microsecond minute month monthname now period_add period_diff quarter sec_to_time second
    str_to_date subdate subtime sysdate time time_format time_to_sec timediff timestamp timestampadd
    timestampdiff to_days to_seconds unix_timestamp utc_date utc_time utc_timestamp week weekday
    weekofyear year yearweek""",
    # JSON (values computed from the arguments; none of them writes a table)
    """json_array json_contains json_contains_path json_depth json_extract json_keys json_length
    json_object json_overlaps json_pretty json_quote json_search json_type json_unquote json_valid
    json_value json_merge_patch json_merge_preserve json_set json_insert json_replace json_remove
    json_array_append json_array_insert""",
    # the session, read-only
    "database schema version current_user user connection_id uuid",
    # keywords the parser reads as calls
    "row",
)
