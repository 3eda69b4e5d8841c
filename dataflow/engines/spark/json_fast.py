"""Read local JSON lines with Spark's own JSON reader, numbering lines by row position.

The exact path (``read._jsonl``) reads each file as bytes (a compressed one through the Python
data source), splits it into numbered lines and parses every line with ``from_json``. When every
line of a file starts with ``{`` (no blank lines, valid UTF-8: ``aligned``,
``connectors.formats.aligned``: one pass on the driver, or on the executors for a large input)
the JSON reader sees exactly those lines, one row each, in order;
parsed with the same schema and corrupt-record column, in PERMISSIVE mode, they give the same rows
and the same bad rows. A row's line number is its position in its file's one task:
``monotonically_increasing_id`` (partition index << 33 | row index in the partition) with the
partition bits masked off. That holds only while each file is one whole task, so dataflow's
actions run inside ``one_task_per_file`` (no split, no two files packed together), a split is an
error (``raise_error``), and a DataFrame that leaves dataflow (``Pipeline.to_spark``) is read by
the exact path instead. The input's files that are not aligned are read by the exact path, in
the same frame (``read._jsonl``). A compressed file takes the fast path when Spark's reader
decompresses it by its name as dataflow's readers do (``spark_reads``: gzip, bz2, zstd; not xz)
and it is whole (the check decompresses it, refusing a truncated one or data after its last
gzip member, which fail Spark's reader).
"""
from __future__ import annotations

import codecs
import contextlib
import functools
import os
from typing import TYPE_CHECKING, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from connectors.formats import GONE
from connectors.formats.aligned import object_lines
from connectors.formats.compressed import INFLATION, codec_of, read_by_name
from connectors.formats.lines import max_line_bytes
from connectors.registry import strip_scheme
from dataflow.columns import SOURCE
from dataflow.engines.spark.columns import sql_literal, sql_name
from dataflow.engines.spark.lineage_key import MAX_FILES, LineKey
from dataflow.engines.spark import scan
from dataflow.lineage import LINE
from dataflow.ops.table.types import SPARK_TYPES

if TYPE_CHECKING:
    from dataflow.engines.spark.compile import SparkRead

__all__ = ["CORRUPT", "DRIVER_CHECK_BYTES", "DRIVER_CHECK_FILES", "FAILED", "aligned", "fast_jsonl", "line_key", "may_be_eligible", "one_task_per_file", "spark_reads"]

CORRUPT = "__df_json_corrupt__"
FAILED = "__df_json_failed__"
_ROW_BITS = (1 << 33) - 1  # monotonically_increasing_id's row-in-partition bits
_WHOLE = str(1 << 50)  # bytes: above any file, so a file is one split and no two files share a task
DRIVER_CHECK_FILES = 10_000  # an input the driver checks itself: at most this many files
DRIVER_CHECK_BYTES = 1 << 30  # and this many bytes (about 0.3 s of reading); a bigger one is checked by the executors
_COMPRESSED_COST = INFLATION * 8  # a compressed byte costs the check ~64 plain ones: its bytes of lines, decompressed at ~1/8 the speed of the plain pass
_SPARK_CODECS = {"gzip": ".gz", "bz2": ".bz2", "zstd": ".zst"}  # Hadoop's codecs, by the name's suffix
_TASK_CONFS = {"spark.sql.files.maxPartitionBytes": _WHOLE, "spark.sql.files.openCostInBytes": _WHOLE, "spark.sql.files.maxPartitionNum": str(2**31 - 1)}


def spark_reads(file: str) -> bool:
    """Whether Spark's JSON reader reads ``file``'s lines as dataflow's readers do: plain, or compressed by a codec Hadoop decompresses by the same name."""
    return read_by_name(file, _SPARK_CODECS)


def may_be_eligible(read: SparkRead, files: list[str]) -> bool:
    """``aligned``'s conditions on the read and the files' names alone: local UTF-8 JSON lines, some file that Spark's reader reads (``spark_reads``)."""
    if read.source.format != "jsonl" or read.remote or read.source.in_memory or not files:
        return False
    return codecs.lookup(read.source.options.get("encoding", "utf-8")).name == "utf-8" and any(spark_reads(f) for f in files)


def aligned(read: SparkRead, files: list[str], spark) -> frozenset[str]:
    """The files of ``files`` (local UTF-8 JSON lines of ``read``) that Spark's reader reads (``spark_reads``), whose every line starts with ``{`` and none is longer than the source's ``max_line_bytes`` (a longer one is a row error of the exact path).

    The driver reads an input of at most ``DRIVER_CHECK_FILES`` files and ``DRIVER_CHECK_BYTES``
    bytes itself (while Spark analyses the frames; a compressed byte counts as
    ``_COMPRESSED_COST``); a bigger one is read by a Spark job on the executors, which read it
    anyway, so the driver never reads a large input.
    """
    if not may_be_eligible(read, files):
        return frozenset()
    readable = [f for f in files if spark_reads(f)]
    paths = [strip_scheme(f) for f in readable]
    check = functools.partial(_object_lines, max_line=max_line_bytes(read.source.options))
    if _small(paths):
        lines = [check(p) for p in paths]
    else:
        slices = min(len(paths), 4 * spark.sparkContext.defaultParallelism)
        lines = spark.sparkContext.parallelize(paths, slices).map(check).collect()
    return frozenset(f for f, n in zip(readable, lines) if n is not None)


def _object_lines(path: str, max_line: int) -> int | None:
    """``object_lines``, None for a file gone since it was listed (the exact path records it)."""
    try:
        return object_lines(path, max_line=max_line)
    except GONE:
        return None


def _small(paths: list[str]) -> bool:
    """Whether ``paths`` are few and small enough for the driver to read (a stat each, up to the first past the limit)."""
    if len(paths) > DRIVER_CHECK_FILES:
        return False
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p) * (1 if codec_of(p) is None else _COMPRESSED_COST)
        except GONE:
            continue  # gone since it was listed: the check refuses it
        if total > DRIVER_CHECK_BYTES:
            return False
    return True


def one_task_per_file(spark) -> contextlib.AbstractContextManager:
    """Plan file scans as one task per whole file while dataflow's actions run; the session's settings are restored afterwards."""
    from dataflow.engines.spark.session import session_confs

    return session_confs(spark, _TASK_CONFS)


def line_key(files: list[str]) -> LineKey | None:
    """A numeric lineage key for ``files`` (``lineage_key``), or None where the strings must be kept: a path that needs escaping, too many files."""
    paths = [strip_scheme(f) for f in files]
    if not paths or len(paths) > MAX_FILES or not scan.plain(paths):
        return None
    return LineKey(tuple(sorted(paths)))


def _path_sql(files: list[str]) -> str:
    """The connectors' URI of the row's file (``input_file_name()``, ``file:///...``): a prefix cut when no name needs URL escaping."""
    if scan.plain([strip_scheme(f) for f in files]):
        return "substring(input_file_name(), 8)"  # 'file://' + the path itself
    from dataflow.engines.spark.read import _our_path_sql

    return _our_path_sql("regexp_replace(input_file_name(), '^file://', 'file:')")


def _failed(fields: dict[str, str]) -> str:
    """A line that did not parse, as SQL that reads every field whose conversion can fail.

    The reader converts only the fields a query reads: one that no step reads would not be
    checked for its type, and the exact path (``from_json`` over the whole schema) flags it. A
    string field never fails (Spark keeps any JSON value's text), so only the other fields are
    read, in a term that is never true (a block length below 0) and that the optimizer cannot
    fold away (it is not deterministic); it costs one null check on a good row. The term reads
    no ``_metadata`` field: those cost Spark a copy of every row.
    """
    typed = [sql_name(n) for n, t in fields.items() if SPARK_TYPES.get(t, t).upper() != "STRING"]
    if not typed:
        return f"{CORRUPT} IS NOT NULL"
    return f"{CORRUPT} IS NOT NULL OR ({' AND '.join(f'{n} IS NULL' for n in typed)} AND input_file_block_length() < 0)"


def fast_jsonl(
    spark, files: list[str], paths: list[str], fields: dict[str, str], lineage: bool = True, key: LineKey | None = None,
    count: Callable[[DataFrame, Column], DataFrame] | None = None,
) -> DataFrame:
    """(``__source__``, fields..., ``CORRUPT``, ``FAILED``) of aligned local JSON lines; ``paths`` are ``files`` as Spark's reader takes them.

    ``CORRUPT`` holds a line that did not parse (or held a field of another type) and is null
    otherwise; ``FAILED`` flags those lines. Without ``lineage`` no line numbers are made (nothing
    reads ``__source__``). With ``key`` (``line_key(files)``) ``__source__`` is the line's key,
    not its string. ``count(rows, failed)`` observes the read's rows and bad rows on the scan's own
    rows, before any column is made: there they cost no copy of each row.
    The scan names the files' folder where it can (``scan.load``).
    """
    ddl = ", ".join([*(f"{sql_name(n)} {SPARK_TYPES.get(t, t)}" for n, t in fields.items()), f"{CORRUPT} STRING"])
    reader = spark.read.format("json").schema(ddl).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT).option("lineSep", "\n")
    raw = scan.load(reader, files, paths)
    if count is not None:
        raw = count(raw, F.expr(_failed(fields)))
    names = [sql_name(n) for n in fields]
    failed = f"{_failed(fields)} AS {FAILED}"
    if not lineage:
        return raw.selectExpr(*names, CORRUPT, failed)
    # input_file_name() and input_file_block_start() are the task's own, not per-row _metadata fields.
    guard = "raise_error(concat('dataflow: JSON lines file ', input_file_name(), ' was split across tasks; its line numbers would be wrong'))"
    row_id = f"CASE WHEN input_file_block_start() <> 0 THEN {guard} ELSE monotonically_increasing_id() END"
    numbered = raw.selectExpr(*names, CORRUPT, failed, f"({row_id} & {_ROW_BITS}) + 1 AS __df_line__")
    if key is not None:
        source = key.row_sql("__df_line__")
    else:
        source = f"concat({_path_sql(files)}, {sql_literal(LINE)}, CAST(__df_line__ AS STRING))"
    return numbered.selectExpr(f"{source} AS {SOURCE}", *names, CORRUPT, FAILED)
