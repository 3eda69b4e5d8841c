"""Spark functions DuckDB computes through Python functions: ``conv`` (Spark's ``NumberConverter``), ``soundex``, and
``upper``/``lower``/``initcap`` of text beyond ASCII.

``conv(num, from_base, to_base)``: spaces around the text are trimmed, then the digits are read up to the first that is no digit of ``from_base`` (``conv('11Z', 16, 10)`` is
``17``; none: ``0``) as an unsigned 64-bit value; a leading ``-`` negates it in two's complement
where ``to_base`` is positive (``conv('-1', 10, 16)`` is ``FFFFFFFFFFFFFFFF``), and a negative
``to_base`` writes the value signed. Digits above 9 are upper case. A base outside 2..36 or an
empty text gives NULL; a value past 64 bits stops the step, as Spark's overflow error with ANSI on.

``soundex(s)``: American Soundex of the letters A-Z as Spark codes it (a text not starting with one
is returned as it is; H and W are skipped without breaking a run of one code; any other character
breaks it), four characters padded with ``0``.

``upper(s)``/``lower(s)``/``initcap(s)`` of text beyond ASCII: Java's full case mappings, which Python's
are (``straße`` -> ``STRASSE``, ``ﬁ`` -> ``FI``, a final ``Σ`` -> ``ς``, ``İ`` -> ``i̇``); DuckDB maps one
character to one (``ẞ``, ``ﬁ``, ``σ``, ``i``). ASCII text stays with DuckDB's functions. ``initcap``
lowers each word (between spaces) and title-cases its first character instead (``ß`` -> ``Ss``).
"""
from __future__ import annotations

import pyarrow as pa

__all__ = ["MACROS", "convert", "initcap", "register", "soundex"]

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MASK = (1 << 64) - 1

_SOUNDEX = "01230127022455012623017202"  # A..Z: Spark's US English codes (7: H and W)

#: ``__df_conv(num, from, to)``: the number as text (an int's digits), the bases as integers.
MACROS = """
CREATE MACRO __df_conv(n, f, t) AS __df_conv_text(CAST(n AS VARCHAR), CAST(f AS INTEGER), CAST(t AS INTEGER));
CREATE MACRO __df_soundex(s) AS __df_soundex_text(CAST(s AS VARCHAR));
CREATE MACRO __df_ascii(s) AS strlen(CAST(s AS VARCHAR)) = length(CAST(s AS VARCHAR));
CREATE MACRO __df_upper(s) AS CASE WHEN __df_ascii(s) THEN upper(CAST(s AS VARCHAR)) ELSE __df_case_text(CAST(s AS VARCHAR), 'upper') END;
CREATE MACRO __df_lower(s) AS CASE WHEN __df_ascii(s) THEN lower(CAST(s AS VARCHAR)) ELSE __df_case_text(CAST(s AS VARCHAR), 'lower') END;
"""


def convert(text: str, from_base: int, to_base: int) -> str | None:
    """``text``'s leading digits in ``from_base`` written in ``to_base`` (Spark's ``conv``)."""
    text = text.strip(" ")  # Spark trims spaces (not other white space) first
    if not (2 <= from_base <= 36 and 2 <= abs(to_base) <= 36) or not text:
        return None
    negative = text[0] == "-"
    value = 0
    for ch in text[1:] if negative else text:
        digit = _DIGITS.find(ch.upper()) if ch.isascii() else -1
        if not 0 <= digit < from_base:
            break
        value = value * from_base + digit
        if value > _MASK:
            raise ValueError(f"conv: {text!r} in base {from_base} overflows 64 bits (Spark: ARITHMETIC_OVERFLOW)")
    signed = value - (1 << 64) if value >> 63 else value
    if negative and to_base > 0:
        signed = -1 if signed < 0 else -signed
    if to_base < 0 and signed < 0:
        signed, negative = -signed, True
    unsigned = signed & _MASK
    digits = ""
    while True:
        unsigned, rest = divmod(unsigned, abs(to_base))
        digits = _DIGITS[rest] + digits
        if not unsigned:
            break
    return "-" + digits if negative and to_base < 0 else digits


def soundex(text: str) -> str:
    """Spark's ``soundex``: the first letter, then the codes of the letters after it, a code repeated without a break kept once."""
    if not text:
        return text
    first = text[0].upper() if text[0].isascii() else text[0]
    if not "A" <= first <= "Z":
        return text
    out, last = [first], _SOUNDEX[ord(first) - 65]
    for ch in text[1:]:
        ch = ch.upper() if ch.isascii() else ch
        if not "A" <= ch <= "Z":
            last = "0"
            continue
        code = _SOUNDEX[ord(ch) - 65]
        if code == "7":
            continue
        if code != "0" and code != last:
            out.append(code)
            if len(out) > 3:
                break
        last = code
    return "".join(out).ljust(4, "0")


def initcap(text: str) -> str:
    """Spark's ``initcap``: each word (between spaces) lowered, its first character title-cased instead (``ß`` -> ``Ss``, ``ẞ`` stays)."""
    return " ".join(word[:1].title() + word.lower()[len(word[:1].lower()):] for word in text.split(" "))


_CASES = {"upper": str.upper, "lower": str.lower, "initcap": initcap}


def _case(texts: pa.Array, how: pa.Array) -> pa.Array:
    case = _CASES[how[0].as_py()] if len(how) else None  # a literal: the same for every row
    return pa.array([None if t is None else case(t) for t in texts.to_pylist()], pa.string())


def _soundex(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else soundex(t) for t in texts.to_pylist()], pa.string())


def _conv(texts: pa.Array, froms: pa.Array, tos: pa.Array) -> pa.Array:
    rows = zip(texts.to_pylist(), froms.to_pylist(), tos.to_pylist())
    return pa.array([None if None in row else convert(*row) for row in rows], pa.string())


def register(con) -> None:
    """Create the Python functions and ``MACROS`` on a DuckDB connection."""
    from duckdb.sqltypes import INTEGER, VARCHAR

    con.create_function("__df_conv_text", _conv, [VARCHAR, INTEGER, INTEGER], VARCHAR, type="arrow", null_handling="special", side_effects=False)
    con.create_function("__df_soundex_text", _soundex, [VARCHAR], VARCHAR, type="arrow", null_handling="special", side_effects=False)
    con.create_function("__df_case_text", _case, [VARCHAR, VARCHAR], VARCHAR, type="arrow", null_handling="special", side_effects=False)
    con.execute(MACROS)
