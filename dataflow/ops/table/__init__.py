"""Table operators: SQL expressions, JSON/regex parsing, casts, dedup, aggregation, windows and joins."""
