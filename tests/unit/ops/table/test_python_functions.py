"""Spark's ``conv`` and ``soundex`` as dataflow computes them on Ray (``python_functions``): the examples of Spark's function reference and their edges."""
from __future__ import annotations

import pytest

from dataflow.ops.table.python_functions import convert, soundex


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
