"""DuckDB on Ray computes times in UTC, as dataflow's Spark sessions do, whatever the machine's time zone.

With ICU built in, DuckDB took the process's zone (``TZ``): ``hour()`` of 00:00 UTC was 9 on a machine in Tokyo, 0 on Spark.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dataflow.ops.table.sql import ExprError, parse

_PROBE = """
import datetime as d, json, pyarrow as pa
from dataflow.ops.table.duck import with_columns
from dataflow.ops.table.sql import duckdb_sql, parse
t = pa.table({"t": pa.array([d.datetime(2024, 1, 1, 0, 30, tzinfo=d.timezone.utc)], pa.timestamp("us", tz="UTC"))})
cols = {"h": "hour(t)", "day": "cast(to_date(t) as string)", "text": "date_format(t, 'yyyy-MM-dd HH:mm')"}
out = with_columns(t, {k: duckdb_sql(parse(v)) for k, v in cols.items()})
print(json.dumps({k: out.column(k)[0].as_py() for k in cols}))
"""


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles"])
def test_times_are_utc_whatever_the_machines_zone(zone):
    env = {**os.environ, "TZ": zone}
    got = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    assert json.loads(got.stdout.strip().splitlines()[-1]) == {"h": 0, "day": "2024-01-01", "text": "2024-01-01 00:30"}


def test_array_sort_with_a_comparator_is_refused_on_both_engines():
    with pytest.raises(ExprError, match="array_sort with a comparator is not supported"):
        parse("array_sort(arr, (l, r) -> CASE WHEN l < r THEN 1 ELSE -1 END)")
    parse("array_sort(arr)")
