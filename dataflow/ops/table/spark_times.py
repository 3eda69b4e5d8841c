"""Text read as a timestamp or a date as Spark's casts read it (``CAST(s AS TIMESTAMP)``, ``to_timestamp(s)``, ``to_date(s)``, ``year(s)``...).

Spark's grammar, checked against Spark's own values: white space and control characters around
the text are trimmed; a year of 4 to 6 digits with an optional sign, then optionally ``-month``
and ``-day`` (1 or 2 digits each); after the day, ``' '`` or ``'T'`` and a time: an hour, then
optionally ``:minute`` and ``:second`` (1 or 2 digits each) and ``.fraction`` (any digits, cut to
microseconds); after the second only, a zone, after one optional space: ``Z``, an offset (``+8``,
``+08``, ``+0800``, ``+08:00``, ``+08:00:00``, at most 18 hours), ``UTC``/``UT``/``GMT`` with or
without an offset, or a region (``Europe/Paris``, and Java's short ids such as ``PST``). A time
alone (``10:05``, ``T10``) is today's, in UTC (the session's zone); a date alone is its midnight.
A date reads the same date part and ignores anything after a ``' '`` or ``'T'`` that follows the
day. Anything else is NULL (DuckDB's casts also read ``2024/01/01``, two spaces or a tab before
the time, ``infinity``, ``24:00:00``; and refused ``2024``, ``2024-01``, `` 2024-01-01 ``, ``+8``).

DuckDB reads the common forms itself (``FAST_INSTANT``, ``FAST_DATE``: the same values); the
others go through the Python functions here (``__df_text_instant``, ``__df_text_date``). The same
zones place ``make_timestamp(..., zone)``'s wall-clock time (``__df_zoned``). Text read by a Java
pattern (``to_timestamp(s, fmt)``) is checked against ``pattern_text`` before DuckDB's ``strptime``.
"""
from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo

import pyarrow as pa

__all__ = ["MACROS", "date_days", "instant_micros", "pattern_text", "pattern_tokens", "register", "zoned_micros"]

_WS = "".join(map(chr, range(33)))  # what Spark's trimAll takes off both ends
_OFFSET = r"[+-]\d{1,2}(?::?\d{2}(?::\d{2})?)?"
_ZONE = rf"Z|{_OFFSET}|(?:UTC|UT|GMT)(?:{_OFFSET})?|[A-Za-z][A-Za-z0-9_+\-/]*"
_TIME = rf"(\d{{1,2}})(?::(\d{{1,2}})(?::(\d{{1,2}})(?:\.(\d*))?(?: ?({_ZONE}))?)?)?"
_INSTANT = re.compile(rf"([+-]?\d{{4,6}})(?:-(\d{{1,2}})(?:-(\d{{1,2}})(?:[ T]{_TIME})?)?)?")
_TIME_ONLY = re.compile(rf"(T?){_TIME}")
_DATE = re.compile(r"([+-]?\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?", re.DOTALL)
_OFFSET_PARTS = re.compile(r"(?:UTC|UT|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::(\d{2}))?")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: Java's ``ZoneId.SHORT_IDS``, which Spark reads zone names through.
_SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo",
    "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}

#: Text DuckDB's own casts read as Spark does (to the microsecond, hours below 24, a zone ``Z``, ``+hh``, ``+hhmm`` or ``+hh:mm``; a date's first 10 characters).
FAST_INSTANT = r"\d{4}-\d{2}-\d{2}(?:[ T](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?(?:Z|[+-](?:0\d|1[0-7])(?::?[0-5]\d)?)?)?"
FAST_DATE = r"(?s)\d{4}-\d{2}-\d{2}(?:[ T].*)?"

#: ``__df_instant(x)`` / ``__df_date(x)``: any value as ``TRY_CAST(x AS TIMESTAMPTZ)`` / ``AS DATE``, text by Spark's grammar.
MACROS = f"""
CREATE MACRO __df_instant(x) AS CASE WHEN typeof(x) <> 'VARCHAR' THEN TRY_CAST(x AS TIMESTAMPTZ)
  WHEN regexp_full_match(CAST(x AS VARCHAR), '{FAST_INSTANT}') THEN TRY_CAST(x AS TIMESTAMPTZ)
  ELSE __df_text_instant(CAST(x AS VARCHAR)) END;
CREATE MACRO __df_date(x) AS CASE WHEN typeof(x) <> 'VARCHAR' THEN TRY_CAST(x AS DATE)
  WHEN regexp_full_match(CAST(x AS VARCHAR), '{FAST_DATE}') THEN TRY_CAST(left(CAST(x AS VARCHAR), 10) AS DATE)
  ELSE __df_text_date(CAST(x AS VARCHAR)) END;
"""


#: A Java pattern's letters (by their count) as the text Spark's parser reads for them (the fraction's ``S``: in
#: ``pattern_text``). A pattern with another letter, or another count, is not checked.
_FIELDS = {"y": {1: r"\d{4}", 2: r"\d{2}", 4: r"\d{4}"}, "M": {1: r"\d{1,2}", 2: r"\d{2}", 3: r"[A-Za-z]{3}", 4: r"[A-Za-z]+"},
           **{c: {1: r"\d{1,2}", 2: r"\d{2}"} for c in "dHhms"}, "a": {1: r"[AaPp][Mm]"}, "E": {n: r"[A-Za-z]+" for n in (1, 2, 3, 4)},
           "X": {1: r"(?:Z|[+-]\d{2}(?:\d{2})?)", 2: r"(?:Z|[+-]\d{4})", 3: r"(?:Z|[+-]\d{2}:\d{2})"}, "Z": {n: r"[+-]\d{4}" for n in (1, 2, 3)}}
_PATTERN_PART = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.DOTALL)


def pattern_text(pattern: str) -> str | None:
    """The regular expression (RE2's and Python's) of the text a Java date-time ``pattern`` reads, as strictly as
    Spark's parser: ``MM``, ``dd``, ``HH``... two digits, ``M``, ``d``, ``H``... one or two, ``yyyy`` four,
    ``S`` repeated n times one to n digits (up to 6), the text whole (no space around); None for a pattern
    with a letter not listed (``D``, ``G``, ``u``, ``z``...), which is not checked."""
    parts = []
    for token, letter in pattern_tokens(pattern):
        if letter is None:
            parts.append(_escaped(token))
        elif letter == "S" and len(token) <= 6:
            parts.append(rf"\d{{1,{len(token)}}}")
        else:
            widths = _FIELDS.get(letter, {})
            if len(token) not in widths:
                return None
            parts.append(widths[len(token)])
    return "".join(parts)


def pattern_tokens(pattern: str) -> list[tuple[str, str | None]]:
    """A Java date-time pattern's pieces: (a run of one letter, the letter), or (literal text, None); a quoted text is its letters."""
    tokens: list[tuple[str, str | None]] = []
    for m in _PATTERN_PART.finditer(pattern):
        token = m.group(0)
        if token.startswith("'"):
            tokens.append((token[1:-1].replace("''", "'") if token != "''" else "'", None))
        else:
            tokens.append((token, m.group(1)))
    return tokens


def _escaped(text: str) -> str:
    return "".join("\\" + c if c in r".^$*+?()[]{}|\/" else c for c in text)


@functools.lru_cache(maxsize=1024)
def _offset(zone: str) -> dt.tzinfo | None:
    """A zone's offset or region, as Java's ``ZoneId.of`` reads it; None where it reads as none."""
    if zone in ("", "Z", "UTC", "UT", "GMT"):
        return dt.timezone.utc
    zone = _SHORT_IDS.get(zone, zone)
    parts = _OFFSET_PARTS.fullmatch(zone)
    if parts is not None:
        sign, hours, minutes, seconds = parts.groups()
        span = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if int(minutes or 0) > 59 or int(seconds or 0) > 59 or span > dt.timedelta(hours=18):
            return None
        return dt.timezone(-span if sign == "-" else span)
    return _region(zone)


def _region(name: str) -> dt.tzinfo | None:
    """A region of the time zone database by its name (``Europe/Paris``, ``EST5EDT``, ``Zulu``), as Java's ``ZoneId.of`` finds it."""
    return zoneinfo.ZoneInfo(name) if name in _regions() and name != "Factory" else None


@functools.cache
def _regions() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _micros(days: int, hour: str | None, minute: str | None, second: str | None, fraction: str | None, zone: str | None) -> int | None:
    """The instant of a local time on the day ``days`` after the epoch in ``zone``, in microseconds since the epoch."""
    h, m, s = int(hour or 0), int(minute or 0), int(second or 0)
    tz = _offset(zone or "")
    if h > 23 or m > 59 or s > 59 or tz is None:
        return None
    local = ((days * 24 + h) * 60 + m) * 60 + s
    return _at(local * 1_000_000 + int((fraction or "")[:6].ljust(6, "0")), tz)


def _at(local: int, tz: dt.tzinfo) -> int | None:
    """The instant of the wall-clock time ``local`` (microseconds since 1970-01-01 00:00) in ``tz``."""
    if isinstance(tz, dt.timezone):  # a fixed offset: any year
        return local - int(tz.utcoffset(None).total_seconds()) * 1_000_000
    try:  # a region's offset at that time (Java's: the earlier one where clocks go back, shifted ahead across a gap, as Python's fold=0)
        wall = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=local)
    except OverflowError:  # beyond the years Python's times hold
        return None
    return local - int(wall.replace(tzinfo=tz).utcoffset().total_seconds()) * 1_000_000


def zoned_micros(local: int, zone: str) -> int | None:
    """``make_timestamp(..., zone)``: the wall-clock time ``local`` (microseconds) in ``zone``, as an instant.

    Raises:
        ValueError: a zone Java does not know (Spark's step fails too).
    """
    tz = _offset(zone.strip(_WS))
    if tz is None:
        raise ValueError(f"make_timestamp: unknown time zone {zone!r} (Spark: INVALID_TIMEZONE)")
    return _at(local, tz)


def _day(year: str, month: str | None, day: str | None) -> int | None:
    """Days since the epoch of a date of the proleptic Gregorian calendar (any year Spark reads), None where there is no such day."""
    y, m, d = int(year), int(month or 1), int(day or 1)
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    if not 1 <= m <= 12 or not 1 <= d <= (29 if m == 2 and leap else _MONTH_DAYS[m - 1]):
        return None
    y -= m <= 2  # days from the civil date: years starting in March
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def instant_micros(text: str) -> int | None:
    """``text`` as Spark's ``CAST(text AS TIMESTAMP)``: microseconds since the epoch, or None."""
    text = text.strip(_WS)
    m = _INSTANT.fullmatch(text)
    if m is not None:
        year, month, day, *time = m.groups()
        days = _day(year, month, day)
        return None if days is None else _micros(days, *time)
    m = _TIME_ONLY.fullmatch(text)
    if m is None or not (m.group(1) or m.group(3)):  # a bare number is a year, which takes 4 digits
        return None
    return _micros((dt.datetime.now(dt.timezone.utc).date() - _EPOCH.date()).days, *m.groups()[1:])


def date_days(text: str) -> int | None:
    """``text`` as Spark's ``CAST(text AS DATE)``: days since the epoch, or None."""
    m = _DATE.fullmatch(text.strip(_WS))
    return None if m is None else _day(*m.groups())


def _instants(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else instant_micros(t) for t in texts.to_pylist()], pa.int64()).cast(pa.timestamp("us", "UTC"))


def _dates(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else date_days(t) for t in texts.to_pylist()], pa.int32()).cast(pa.date32())


def _zoned(local: pa.Array, zones: pa.Array) -> pa.Array:
    micros = local.cast(pa.int64()).to_pylist()
    return pa.array([None if t is None or z is None else zoned_micros(t, z) for t, z in zip(micros, zones.to_pylist())], pa.int64()).cast(pa.timestamp("us", "UTC"))


def register(con) -> None:
    """Create the Python functions and ``MACROS`` on a DuckDB connection."""
    from duckdb.sqltypes import DATE, TIMESTAMP, TIMESTAMP_TZ, VARCHAR

    con.create_function("__df_text_instant", _instants, [VARCHAR], TIMESTAMP_TZ, type="arrow", null_handling="special", side_effects=True)
    con.create_function("__df_text_date", _dates, [VARCHAR], DATE, type="arrow", null_handling="special", side_effects=False)
    con.create_function("__df_zoned", _zoned, [TIMESTAMP, VARCHAR], TIMESTAMP_TZ, type="arrow", null_handling="special", side_effects=False)
    con.execute(MACROS)
