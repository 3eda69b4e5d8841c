"""Text read as a time by Spark's cast grammar (``spark_times``): the values Spark 4 gave for the same text
(``CAST(s AS TIMESTAMP)`` / ``AS DATE`` over a column, session time zone UTC), and DuckDB's fast path equal to it."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.ops.table import duck
from dataflow.ops.table.sql import duckdb_sql, parse
from dataflow.ops.table.spark_times import date_days, instant_micros, zoned_micros

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)

#: text: Spark's timestamp (UTC), None where Spark gives NULL.
SPARK_INSTANTS = {
    "2024": "2024-01-01 00:00:00", "2024-1": "2024-01-01 00:00:00", "2024-1-1": "2024-01-01 00:00:00", "+2024-01-01": "2024-01-01 00:00:00",
    " 2024-01-01 ": "2024-01-01 00:00:00", "\t2024-01-01": "2024-01-01 00:00:00", "2024-01-01 10": "2024-01-01 10:00:00",
    "2024-01-01 10:5": "2024-01-01 10:05:00", "2024-01-01 1:2:3": "2024-01-01 01:02:03", "2024-01-01 10:05:06.": "2024-01-01 10:05:06",
    "2024-01-01 10:05:06.12345678901": "2024-01-01 10:05:06.123456", "2024-01-01 10:05:06 Z": "2024-01-01 10:05:06",
    "2024-01-01 10:05:06+8": "2024-01-01 02:05:06", "2024-01-01 10:05:06-8": "2024-01-01 18:05:06", "2024-01-01 10:05:06+0800": "2024-01-01 02:05:06",
    "2024-01-01 10:05:06+08:00:00": "2024-01-01 02:05:06", "2024-01-01 10:05:06 +08:00": "2024-01-01 02:05:06", "2024-01-01 10:05:06+8:00": "2024-01-01 02:05:06",
    "2024-01-01 10:05:06UTC": "2024-01-01 10:05:06", "2024-01-01 10:05:06UTC+08:00": "2024-01-01 02:05:06", "2024-01-01 10:05:06GMT+1": "2024-01-01 09:05:06",
    "2024-01-01 10:05:06UT+1": "2024-01-01 09:05:06", "2024-01-01 10:05:06Europe/Paris": "2024-01-01 09:05:06", "2024-01-01 10:05:06EST": "2024-01-01 15:05:06",
    "2024-01-01 10:05:06PST": "2024-01-01 18:05:06", "2024-01-01 10:05:06CET": "2024-01-01 09:05:06", "2024-01-01 10:05:06+18:00": "2023-12-31 16:05:06",
    "2024-07-01 12:00:00 Zulu": "2024-07-01 12:00:00", "2024-07-01 12:00:00 EST5EDT": "2024-07-01 16:00:00", "2024-07-01 12:00:00 Etc/GMT+5": "2024-07-01 17:00:00",
    "2024-07-01 12:00:00 UTC-03:30": "2024-07-01 15:30:00", "2024-03-31 02:30:00 Europe/Paris": "2024-03-31 01:30:00",
    "2024-10-27 02:30:00 Europe/Paris": "2024-10-27 00:30:00", "9999-12-31 23:59:59.999999": "9999-12-31 23:59:59.999999",
    "2024/01/01": None, "024-01-01": None, "2024-001-01": None, "2024-01-01x": None, "2024-": None, "2024-01-01T": None, "2024-01-01 10:": None,
    "2024-01-01 010:05:06": None, "2024-01-01 10:05:06:07": None, "2024-01-01  10:05:06": None, "2024-01-01\t10:05:06": None,
    "2024-01-01T10:05Z": None, "2024-01-01 10Z": None, "2024-01-01 10:05:06z": None, "2024-01-01 10:05:06+19:00": None,
    "2024-01-01 10:05:06Europe/Nowhere": None, "2024-07-01 12:00:00 PDT": None, "2024-07-01 12:00:00 CEST": None, "10": None, "": None,
    "\u00a02024-01-01": None, "now": None, "epoch": None, "infinity": None, "2024-02-30": None, "2023-02-29": None, "2024-13-01": None,
    "2024-01-01 24:00:00": None, "2024-01-01 23:60:00": None, "2024-01-01 23:59:60": None, "1234567-01-01": None,
}
#: text: Spark's date, None where Spark gives NULL.
SPARK_DATES = {
    "2024": "2024-01-01", "2024-01": "2024-01-01", "2024-01-01T": "2024-01-01", "2024-01-01 10:": "2024-01-01", "2024-01-01 10:60:00": "2024-01-01",
    "2024-01-01 10:05:06Europe/Nowhere": "2024-01-01", "2024-01-01T10:05:06": "2024-01-01", "2024-02-29": "2024-02-29",
    "2024/01/01": None, "2024-01-01\t10:05:06": None, "2024-01-01x10:05:06": None, "10:05:06": None, "2023-02-29": None, "2024-00-10": None,
    "2024-01-00": None, "now": None, "infinity": None, "": None,
}


def _micros(text: str) -> int:
    return (dt.datetime.fromisoformat(text).replace(tzinfo=UTC) - EPOCH) // dt.timedelta(microseconds=1)


@pytest.mark.parametrize("text", sorted(SPARK_INSTANTS))
def test_text_reads_as_the_instant_spark_reads(text):
    expected = SPARK_INSTANTS[text]
    assert instant_micros(text) == (None if expected is None else _micros(expected))


@pytest.mark.parametrize("text", sorted(SPARK_DATES))
def test_text_reads_as_the_date_spark_reads(text):
    expected = SPARK_DATES[text]
    assert date_days(text) == (None if expected is None else (dt.date.fromisoformat(expected) - EPOCH.date()).days)


def test_a_time_alone_is_todays_in_utc():
    today = dt.datetime.now(UTC).date()
    for text, clock in (("10:05:06", "10:05:06"), ("T10:05:06Z", "10:05:06"), ("10:05", "10:05:00"), ("T10", "10:00:00")):
        got = instant_micros(text)
        assert got == _micros(f"{today}T{clock}") or got == _micros(f"{dt.datetime.now(UTC).date()}T{clock}")  # midnight may pass


def test_years_beyond_pythons_dates_are_read_as_spark_reads_them():
    """Spark reads a signed year of 4 to 6 digits (7 for a date); the days are the proleptic Gregorian calendar's."""
    import numpy as np

    for text in ("12024-01-01", "-2024-01-01", "+123456-12-31", "1234567-01-01"):  # numpy's days: the same calendar
        days = int(np.datetime64(text.removeprefix("+"), "D").astype("int64"))
        assert date_days(text) == days
        assert instant_micros(text) == (days * 86_400_000_000 if len(text.lstrip("+-").split("-")[0]) <= 6 else None)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)),
       st.sampled_from(["", "Z", "+05:30", "-11:00", "+0530", "-08", "+17:59"]), st.sampled_from([" ", "T"]), st.booleans())
def test_duckdbs_fast_path_reads_what_the_grammar_reads(moment, zone, sep, fraction):
    """The common forms DuckDB casts itself (``FAST_INSTANT``) give the Python grammar's value, and the date its day."""
    text = f"{moment.year:04d}" + moment.strftime(f"-%m-%d{sep}%H:%M:%S" + (".%f" if fraction else "")) + zone
    table = pa.table({"s": [text, f" {text}"]})  # the second, with a space before, takes the Python way
    out = duck.query(table, f"SELECT {duckdb_sql(parse('CAST(s AS TIMESTAMP)'))} AS t, {duckdb_sql(parse('to_date(s)'))} AS d FROM {duck.TABLE}")
    expected = instant_micros(text)
    assert expected is not None
    assert [(v - EPOCH) // dt.timedelta(microseconds=1) for v in out.column("t").to_pylist()] == [expected, expected]
    assert out.column("d").to_pylist() == [moment.date(), moment.date()]


def test_make_timestamps_zone_places_its_wall_clock_time_as_spark_does():
    """Spark's values of ``make_timestamp(2024, m, d, h, mi, s, zone)``; an unknown zone stops the step (Spark: INVALID_TIMEZONE)."""
    wall = _micros("2024-07-02T03:04:05")
    assert zoned_micros(wall, "America/New_York") == _micros("2024-07-02T07:04:05")
    assert zoned_micros(wall, "+08:00") == _micros("2024-07-01T19:04:05")
    assert zoned_micros(_micros("2024-03-31T02:30:00"), "Europe/Paris") == _micros("2024-03-31T01:30:00")  # in the gap: shifted ahead
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        zoned_micros(wall, "Mars/Olympus")


#: (Java pattern, text, whether Spark 4's ``to_timestamp(text, pattern)`` reads it), from Spark.
SPARK_PATTERN_READS = [
    ("yyyy-MM-dd", "2024-01-01", True), ("yyyy-MM-dd", "2024-1-01", False), ("yyyy-MM-dd", "2024-01-1", False), ("yyyy-MM-dd", "24-01-01", False),
    ("yyyy-MM-dd", "2024-01-01 ", False), ("yyyy-MM-dd", " 2024-01-01", False), ("y-M-d", "2024-1-1", True), ("y-M-d", "2024-01-01", True),
    ("yy-MM-dd", "24-01-01", True), ("yy-MM-dd", "4-01-01", False), ("yyyy-MM-dd HH:mm:ss", "2024-01-01 1:00:00", False),
    ("yyyy-MM-dd HH:mm:ss", "2024-01-01 01:0:00", False), ("yyyy-MM-dd HH:mm:ss", "2024-01-01 01:00:00", True),
    ("yyyy-M-d H:m:s", "2024-1-1 1:2:3", True), ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-01 01:00:00.1", True),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-01 01:00:00.123", True), ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-01 01:00:00.1234", False),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-01 01:00:00", False), ("yyyy-MM-dd HH:mm:ss.SSSSSS", "2024-01-01 01:00:00.123", True),
    ("dd/MM/yyyy", "1/2/2024", False), ("dd/MM/yyyy", "01/02/2024", True), ("yyyyMMdd", "20240101", True), ("yyyyMMdd", "2024011", False),
    ("yyyy-MM-dd'T'HH:mm:ss", "2024-01-01T10:00:00", True), ("yyyy-MM-dd'T'HH:mm:ss", "2024-01-01 10:00:00", False),
    ("yyyy-MM-dd HH:mm", "2024-01-01 10:00:00", False), ("dd-MMM-yyyy", "01-Jan-2024", True), ("dd-MMM-yyyy", "1-Jan-2024", False),
    ("yyyy-MM-dd HH:mm:ss XXX", "2024-01-01 10:00:00 +01:00", True), ("yyyy-MM-dd HH:mm:ss XXX", "2024-01-01 10:00:00 Z", True),
    ("yyyy-MM-dd HH:mm:ss XXX", "2024-01-01 10:00:00 +0100", False), ("hh:mm a", "10:00 pm", True), ("hh:mm a", "1:00 PM", False),
]


@pytest.mark.parametrize(("pattern", "text", "reads"), SPARK_PATTERN_READS)
def test_a_patterns_text_is_what_sparks_parser_reads(pattern, text, reads):
    import re

    from dataflow.ops.table.spark_times import pattern_text

    assert bool(re.fullmatch(pattern_text(pattern), text)) is reads


def test_a_pattern_with_a_letter_not_listed_is_not_checked():
    from dataflow.ops.table.spark_times import pattern_text

    assert pattern_text("yyyy-MM-dd HH:mm:ss z") is None and pattern_text("D") is None and pattern_text("yyyyy") is None


def test_a_pattern_reads_in_tokens_with_quoted_text_as_its_letters():
    from dataflow.ops.table.spark_times import pattern_tokens

    assert pattern_tokens("yyyy-MM-dd'T'HH 'o''clock' ''") == [
        ("yyyy", "y"), ("-", None), ("MM", "M"), ("-", None), ("dd", "d"), ("T", None), ("HH", "H"), (" ", None), ("o'clock", None), (" ", None), ("'", None)]
