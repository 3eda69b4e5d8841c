"""Spark's ``conv``, ``soundex`` and case mappings as dataflow computes them on Ray (``python_functions``): the examples of Spark's
function reference and their edges, and the values Spark 4 gave for text beyond ASCII."""
from __future__ import annotations

import pytest

from dataflow.ops.table import duck
from dataflow.ops.table.python_functions import convert, soundex
from dataflow.ops.table.sql import duckdb_sql, parse


@pytest.mark.parametrize(("text", "base", "to", "expected"), [
    ("100", 2, 10, "4"), ("-10", 16, -10, "-16"),  # Spark's own examples
    ("11Z", 16, 10, "17"), ("ff", 16, 2, "11111111"), ("zz", 36, 10, "1295"), ("1.5", 10, 2, "1"), ("x", 10, 10, "0"),
    ("-1", 10, 16, "FFFFFFFFFFFFFFFF"), ("-1", 10, -16, "-1"), ("18446744073709551615", 10, 16, "FFFFFFFFFFFFFFFF"),
    ("8000000000000000", 16, -10, "-9223372036854775808"), ("-8000000000000000", 16, 10, "18446744073709551615"),
    ("", 10, 16, None), ("12", 37, 10, None), ("  12 ", 10, 16, "C"), ("\t12", 10, 16, "0"), ("   ", 10, 16, None), ("12", 10, 1, None), ("١٢", 10, 10, "0"),  # non-ASCII digits are no digits (Spark reads bytes)
])
def test_convert_gives_sparks_text(text, base, to, expected):
    assert convert(text, base, to) == expected


def test_a_value_past_64_bits_stops_the_step():
    with pytest.raises(ValueError, match="overflows 64 bits"):
        convert("18446744073709551616", 10, 16)


@pytest.mark.parametrize(("text", "expected"), [
    ("Miller", "M460"),  # Spark's own example
    ("Robert", "R163"), ("Rupert", "R163"), ("Tymczak", "T522"), ("Pfister", "P236"), ("Ashcraft", "A261"),  # H between S and C: one run
    ("a", "A000"), ("", ""), ("1abc", "1abc"), ("élan", "élan"), ("Lee-Ann", "L500"), ("O'Hara", "O600"),
])
def test_soundex_gives_sparks_code(text, expected):
    assert soundex(text) == expected


#: text: Spark 4's (upper, lower, initcap) of it (escaped where a character combines).
SPARK_CASES = {
    "stra\xdfe": ("STRASSE", "stra\xdfe", "Stra\xdfe"), "\ufb01ne \ufb02ow": ("FINE FLOW", "\ufb01ne \ufb02ow", "Fine Flow"),
    "\u0149x": ("\u02bcNX", "\u0149x", "\u02bcNx"), "\u01f0": ("J\u030c", "\u01f0", "J\u030c"),
    "\u0390": ("\u0399\u0308\u0301", "\u0390", "\u0399\u0308\u0301"), "\u0130stanbul": ("\u0130STANBUL", "i\u0307stanbul", "\u0130stanbul"),
    "x\u0130": ("X\u0130", "xi\u0307", "Xi\u0307"), "\u0130\u0130": ("\u0130\u0130", "i\u0307i\u0307", "\u0130i\u0307"),
    "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3": ("\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03bf\u03c6\u03bf\u03c2",
                                      "\u039f\u03b4\u03bf\u03c2 \u03a3\u03bf\u03c6\u03bf\u03c2"),
    "a\u03a3 b": ("A\u03a3 B", "a\u03c2 b", "A\u03c2 B"), "\u01c5": ("\u01c4", "\u01c6", "\u01c5"), "\u1fb3": ("\u0391\u0399", "\u1fb3", "\u1fbc"),
    "\ufb00": ("FF", "\ufb00", "Ff"), "\xc9COLE": ("\xc9COLE", "\xe9cole", "\xc9cole"), "\u01c8ungla": ("\u01c7UNGLA", "\u01c9ungla", "\u01c8ungla"),
    "hello wORLD \xdf": ("HELLO WORLD SS", "hello world \xdf", "Hello World Ss"), "\xdf": ("SS", "\xdf", "Ss"), "\u1e9e": ("\u1e9e", "\xdf", "\u1e9e"),
    "\u03c3\u03c2": ("\u03a3\u03a3", "\u03c3\u03c2", "\u03a3\u03c2"), "\u01f1": ("\u01f1", "\u01f3", "\u01f2"), "\U00010428": ("\U00010400", "\U00010428", "\U00010400"),
    "\u01c6emal \u01c5emal": ("\u01c4EMAL \u01c4EMAL", "\u01c6emal \u01c6emal", "\u01c5emal \u01c5emal"), " le\xe9d\tx-y z_w": (" LE\xc9D\tX-Y Z_W", " le\xe9d\tx-y z_w", " Le\xe9d\tx-y Z_w"),
    "hello wORLD": ("HELLO WORLD", "hello world", "Hello World"),
}


@pytest.mark.parametrize("text", sorted(SPARK_CASES))
def test_upper_lower_and_initcap_give_sparks_text(text):
    """DuckDB maps one character to one (``straße`` -> ``STRAẞE``, a final sigma ``σ``); Java's full mappings are Spark's."""
    sql = ", ".join(duckdb_sql(parse(f"{f}(s)"), kinds={"s": "string"}) for f in ("upper", "lower", "initcap"))
    assert duck._connection().execute(f"SELECT {sql} FROM (SELECT CAST(? AS VARCHAR) AS s)", [text]).fetchall()[0] == SPARK_CASES[text]
