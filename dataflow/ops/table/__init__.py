"""Table operators: SQL expressions, JSON/regex parsing, casts, dedup, aggregation, windows and joins."""
from dataflow.ops.table import (  # noqa: F401
    aggregate,
    cast,
    dedup,
    filter_rows,
    join,
    parse_json,
    parse_regex,
    select,
    window_aggregate,
    with_columns,
)
