"""Turn a source into a DataFrame with a ``__source__`` column that matches the Ray engine's lineage.

Local files are read natively (UTF-8 text of up to ``NATIVE_TEXT_BYTES`` as bytes, split into numbered
lines at LF or CRLF, a line that is not UTF-8 a row error; Parquet with its row index); remote files,
larger line files, text in other ``encoding``s, compressed line files (``.gz``, ``.bz2``, ``.xz``, ``.zst``: Hadoop's codecs do not
cover them all, and a damaged one must keep its first lines) and CSV (for the Ray reader's
semantics) go through ``DataflowSource``, which streams them. A file is read by one task, as on Ray.
A ``__source__`` column or field in the data is replaced by the read's own lineage; a row holding a
value in a column spelled like dataflow's working columns (``__df_<name>__``) is a row error of the
read, and such columns are left out; every other column, ``source`` included, is the user's. A
JSONL schema left undeclared is inferred by ``json_schema``; a local JSONL file whose lines all
start with ``{`` (plain, or gzip, bz2 or zstd, which Hadoop decompresses) is read by ``json_fast``,
the input's other files by the exact path beside it.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import operator
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.formats import GONE
from connectors.formats.lines import max_line_bytes
from dataflow.columns import SOURCE, is_working, working_column_reason
from dataflow.engines.spark.columns import col, sql_literal, sql_name
from dataflow.ops.registry import get_op
from dataflow.engines.spark.compile import SparkRead, SparkStep
from dataflow.engines.spark.datasource import LINES_SCHEMA, WHOLE_SCHEMA, DataflowSource, write_read_errors
from dataflow.engines.spark.json_schema import infer_json_fields, sample_lines
from dataflow.engines.spark.s3a import apply_settings, native_enabled, s3a_settings, to_s3a
from dataflow.engines.spark import scan
from dataflow.engines.spark.lowerings import LOWERINGS
from dataflow.engines.spark.table_ops import BAD, Checked
from dataflow.lineage import LINE, ROW

if TYPE_CHECKING:
    from dataflow.engines.spark.lineage_key import LineKey
    from dataflow.runtime.settings import CacheSettings

__all__ = ["file_key", "read_source"]

_GLOB_CHARS = "\\[]{}*?"
UNDECODABLE = "__df_undecodable__"
JSON_LINE = "__df_json_line__"
_UNDECODABLE_REASON = "undecodable text (utf-8): invalid UTF-8 byte sequence"
_registered: set[int] = set()
NATIVE_TEXT_BYTES = 16 << 20  # the largest text file Spark reads whole as bytes (then split into lines); a bigger one goes through the Python data source
WHOLE_ROW_BYTES = 64 << 20  # the largest file read as one row (split: file): a 200 MB row ran the JVM of a default local run (2 GiB) out of memory


def _register(spark) -> None:
    if id(spark) not in _registered:
        spark.dataSource.register(DataflowSource)
        _registered.add(id(spark))


def _hadoop_path(uri: str, native_s3: bool) -> str:
    from connectors.registry import scheme_of, strip_scheme

    path = to_s3a(uri) if native_s3 and scheme_of(uri) == "s3" else "file://" + strip_scheme(uri)
    return "".join("\\" + c if c in _GLOB_CHARS else c for c in path)


def _our_path_sql(file_path: str = "_metadata.file_path") -> str:
    """Spark's (URL-encoded) ``_metadata.file_path`` as the URI the connectors list, in SQL."""
    decoded = f"url_decode(regexp_replace({file_path}, '[+]', '%2B'))"
    return f"regexp_replace(regexp_replace({decoded}, '^file:', ''), '^s3a://', 's3://')"


def _our_path(file_path: str = "_metadata.file_path") -> Column:
    return F.expr(_our_path_sql(file_path))


def _python_source(spark, files: list[str], kind: str, schema: T.StructType, read: SparkRead, side, storage: dict, cache: CacheSettings | None, **extra: Any) -> DataFrame:
    _register(spark)
    # The job reaches the data source as a JSON option, so the cache travels as its {dir, max_bytes} form.
    job = {"files": files, "kind": kind, "storage_options": storage, "cache": cache and cache.as_options(), "options": read.source.options, "counted": read.counted, "side": asdict(side), **extra}
    return spark.read.format("dataflow").option("schema", schema.json()).option("job", json.dumps(job)).load()


def file_key(uri: str) -> str:
    """A file as both the listing and Spark's messages (once URL-decoded) name it: a local one by its path, ``s3a://`` as ``s3://``."""
    from connectors.registry import scheme_of, strip_scheme

    if uri.startswith("s3a://"):
        return "s3://" + uri[len("s3a://"):]
    if uri.startswith("file:") and not uri.startswith("file://"):
        return uri[len("file:"):]
    return strip_scheme(uri) if scheme_of(uri) == "file" else uri


def _file_uri(files: list[str], index: Column) -> Column:
    return F.element_at(F.array(*[F.lit(f) for f in files]), index + 1)


def _native(spark, read: SparkRead) -> bool:
    from connectors.registry import scheme_of

    if not read.remote:
        return True
    return scheme_of(read.source.uri) == "s3" and native_enabled(spark)


def _utf8(read: SparkRead) -> bool:
    import codecs

    return codecs.lookup(read.source.options.get("encoding", "utf-8")).name == "utf-8"


def _compressed(files: list[str]) -> tuple[list[str], list[str]]:
    """Split ``files`` into (plain, compressed) by name."""
    from connectors.registry import compression_of

    return [f for f in files if compression_of(f) is None], [f for f in files if compression_of(f) is not None]


def _native_split(spark, read: SparkRead, files: list[str], storage: dict, limit: int, streamed: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """Split ``files`` into (read as bytes by Spark, read by the Python data source).

    Spark reads a file's bytes whole, as one value (copied a few times while split into lines): only
    plain UTF-8 files of at most ``limit`` bytes are, unless ``streamed`` names them (``file_key``);
    the Python data source streams the others (and records a file gone since it was listed).
    """
    from connectors.registry import filesystem

    if not (_native(spark, read) and _utf8(read)):
        return [], files
    plain, _ = _compressed([f for f in files if file_key(f) not in streamed])
    fs = filesystem(plain[0], storage) if plain else None
    small = {f for f in plain if 0 <= _size(fs, f) <= limit}
    return [f for f in plain if f in small], [f for f in files if f not in small]


def _size(fs, uri: str) -> int:
    """The file's size; -1 where it is gone since it was listed (the Python data source records that)."""
    from connectors.registry import strip_scheme

    try:
        return fs.size(strip_scheme(uri))
    except GONE:
        return -1


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _lines(
    spark, read: SparkRead, files: list[str], side, storage: dict, cache: CacheSettings | None = None, only_invalid: bool = False, streamed: frozenset[str] = frozenset(),
) -> DataFrame:
    """(__source__, text, UNDECODABLE) per line, numbered as ``bytes.splitlines`` numbers them.

    Natively (local or s3a, UTF-8, not compressed, small: ``_native_split``) a file is read as bytes;
    in a file that is not valid UTF-8 each line is checked on its own bytes, so one bad byte flags
    one line. Other encodings, compressed and large files go through the Python data source, which
    streams and decodes each line and sends the undecodable and too long ones to the error sink
    itself, as the Ray reader does. ``only_invalid``
    keeps the files that are not valid UTF-8 (where every undecodable line is), dropping the
    others before they are split. ``streamed``: files the Python data source reads whatever they are (``file_key``).
    """
    # no line of a file of at most max_line_bytes is longer: the Python data source makes a longer one a row error
    plain, packed = _native_split(spark, read, files, storage, min(NATIVE_TEXT_BYTES, max_line_bytes(read.source.options)), streamed)
    frames = []
    if plain:
        raw = scan.load(spark.read.format("binaryFile"), plain, [_hadoop_path(f, True) for f in plain])
        valid = "is_valid_utf8(CAST(content AS STRING))"  # the bytes as they are, not yet checked
        if only_invalid:
            raw = raw.where(f"NOT {valid}")
        # ISO-8859-1 maps each byte to one character: a damaged file splits into its exact line bytes.
        # Splitting on one plain character takes Java's fast path, once CRLF is LF.
        text = f"CASE WHEN {valid} THEN CAST(content AS STRING) ELSE decode(content, 'ISO-8859-1') END"
        lf = f"replace({text}, '\\r\\n', '\\n')"  # SQL string escapes: CR LF, LF
        parts = raw.selectExpr(f"{_our_path_sql()} AS __path", f"{valid} AS __valid", f"split({lf}, '\\n') AS __lines")
        # The last piece's index, taken before the split rows are made: a filter that read the
        # file's array of lines would carry it into every line's row (a copy per row where Spark
        # does not compile the filter: quadratic, out of memory on a large file).
        parts = parts.selectExpr("__path", "__valid", "__lines", "size(__lines) - 1 AS __last")
        # posexplode_outer: the plain one makes Spark re-split every file to infer a size filter.
        exploded = parts.selectExpr("__path", "__valid", "__last", "posexplode_outer(__lines) AS (__pos, __text)")
        # A file that ends with a newline yields one empty piece after it: not a line.
        exploded = exploded.where("NOT (__pos = __last AND __text = '')")
        line_bytes = "CAST(encode(__text, 'ISO-8859-1') AS STRING)"  # a line of a damaged file, as its bytes
        frames.append(exploded.selectExpr(
            f"concat(__path, {sql_literal(LINE)}, CAST(__pos + 1 AS STRING)) AS {SOURCE}",
            f"CASE WHEN __valid THEN __text ELSE {line_bytes} END AS text",
            f"CASE WHEN __valid THEN FALSE ELSE NOT is_valid_utf8({line_bytes}) END AS {UNDECODABLE}",
        ))
    if packed:
        df = _python_source(spark, packed, "lines", T._parse_datatype_string(LINES_SCHEMA), read, side, storage, cache)
        source = F.concat(_file_uri(packed, F.col("file")), F.lit(LINE), F.col("line").cast("string"))
        df = df.select(source.alias(SOURCE), "text", F.lit(False).alias(UNDECODABLE))
        frames.append(df.where(F.lit(False)) if only_invalid else df)  # this reader sends undecodable lines to the sink itself
    return _union(frames)


def _whole(spark, read: SparkRead, files: list[str], side, storage: dict, cache: CacheSettings | None = None, streamed: frozenset[str] = frozenset()) -> Checked:
    """(__source__, text) per file; a file of more than ``WHOLE_ROW_BYTES`` is a row error (``FileTooLarge``), not a row; ``streamed``: see ``_lines``."""
    plain, packed = _native_split(spark, read, files, storage, min(NATIVE_TEXT_BYTES, WHOLE_ROW_BYTES), streamed)
    frames = []
    if plain:
        raw = scan.load(spark.read.format("binaryFile"), plain, [_hadoop_path(f, True) for f in plain])
        text = F.col("content").cast("string")
        frames.append(raw.select(_our_path().alias(SOURCE), text.alias("text"), (~F.is_valid_utf8(text)).alias(UNDECODABLE)))
    if packed:
        df = _python_source(spark, packed, "whole", T._parse_datatype_string(WHOLE_SCHEMA), read, side, storage, cache, whole_row_bytes=WHOLE_ROW_BYTES)
        frames.append(df.select(_file_uri(packed, F.col("file")).alias(SOURCE), "text", F.lit(False).alias(UNDECODABLE)))
    return _undecodable(_union(frames))


def _undecodable(df: DataFrame, errors_from: Callable[[], DataFrame] | None = None) -> Checked:
    """Rows of text read natively, with those whose bytes are not UTF-8 flagged as row errors.

    ``errors_from`` builds the same rows of only the files that are not UTF-8, so the error write
    need not keep every line of a clean input.
    """
    failed = (lambda: errors_from().withColumn(BAD, F.col(UNDECODABLE))) if errors_from is not None else None
    case = (UNDECODABLE, "UnicodeDecodeError", sql_literal(_UNDECODABLE_REASON))
    return Checked(df.withColumn(BAD, F.col(UNDECODABLE)), [case], helpers=(UNDECODABLE,), errors_from=failed, flag=UNDECODABLE)


def _jsonl(
    spark, read: SparkRead, files: list[str], side, storage: dict, cache: CacheSettings | None = None, fast: frozenset[str] = frozenset(),
    key: LineKey | None = None, count: Callable[[DataFrame, Column], DataFrame] | None = None, streamed: frozenset[str] = frozenset(),
) -> Checked:
    """Parsed JSON lines; ``fast``: those of ``files`` that passed ``json_fast.aligned`` (the job's actions run one task per file); ``key``, ``count``, ``streamed``: see ``read_source``."""
    declared = read.source.options.get("schema")
    fields = {k: v for k, v in (declared or infer_json_fields(sample_lines(files, storage, max_line_bytes(read.source.options)))).items() if k != SOURCE}
    if not fields:  # no JSON object in the input (empty files): the columns the steps name are null
        fields = {name: "string" for name in sorted(read.named)}
    # Built, not validated: inferred fields may hold Spark DDL types the op's param model does not take.
    params = get_op("table.parse_json").params.model_construct(fields=fields, column=JSON_LINE)
    step = SparkStep(index=-1, name="table.parse_json", params=params, path="read", kind="map")

    def parsed(only: list[str] = files) -> Checked:
        lines = _lines(spark, read, only, side, storage, cache, streamed=streamed).where(~F.col("text").rlike(r"^\s*$"))
        # The raw line under a reserved name: a JSON field called "text" (Dolma, RedPajama) is data, not the line.
        undecodable = _undecodable(lines.withColumnRenamed("text", JSON_LINE))
        return undecodable.then(LOWERINGS["table.parse_json"].load()(undecodable.rows(), step, {}))

    # The error write parses the lines again, and only when the counters show bad rows: cheaper
    # than persisting every parsed row of a clean input for it.
    if fast and fields:  # Spark's reader refuses a query of its corrupt-record column alone
        from dataflow.engines.spark.json_fast import CORRUPT, FAILED, fast_jsonl

        rest = [f for f in files if f not in fast]
        if any(is_working(n) for n in fields) or rest:
            count = None  # _refuse_working flags more rows after the scan, or the rest are read apart: the read's own observation counts them
        aligned = [f for f in files if f in fast]
        df = fast_jsonl(spark, aligned, [_hadoop_path(f, True) for f in aligned], fields, read.lineage, key if not rest else None, count)
        df = df.withColumn(BAD, F.col(FAILED))
        if rest:
            # The other files (a blank line, bytes that are not UTF-8, damaged or xz-compressed) by the exact path, beside
            # them: the same rows, flags and lineage strings as that path gives for every file.
            df = df.drop(CORRUPT, FAILED)
            df = df.unionByName(parsed(rest).df.select(*[col(c) for c in df.columns]))
        # The same bad rows as the exact path's; their records (source, reason) come from it, built
        # only then (building its frames costs Spark ~0.5 s of analysis).
        return Checked(df, [], helpers=() if rest else (CORRUPT, FAILED), errors_from=parsed, counted=count is not None)
    fused = parsed()
    return Checked(fused.df, fused.cases, helpers=(*fused.helpers, JSON_LINE), errors_from=lambda: parsed().df)


def _csv(spark, read: SparkRead, files: list[str], side, storage: dict, cache: CacheSettings | None = None) -> DataFrame:
    from connectors.formats.compressed import DamagedFile
    from connectors.registry import open_lines

    first, limit = "", max_line_bytes(read.source.options)
    for uri in files:  # the first header that can be read; the read reports a damaged or gone file, or a header over the line limit
        try:
            with open_lines(uri, storage) as f:
                line = f.readline(limit + 2)
        except (DamagedFile, *GONE):
            continue
        if len(line.rstrip(b"\r\n")) <= limit:
            first = line.decode(read.source.options.get("encoding", "utf-8"), "replace").removeprefix("\ufeff")
            break
    header = next(csv.reader(io.StringIO(first), delimiter=read.source.options.get("delimiter", ",")), [])
    names = [SOURCE, *[h for h in header if h != SOURCE]]
    schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
    return _python_source(spark, files, "csv", schema, read, side, storage, cache, columns=names)


def _parquet(spark, read: SparkRead, files: list[str], side, storage: dict, cache: CacheSettings | None = None, streamed: frozenset[str] = frozenset()) -> DataFrame:
    """The rows of the files whose footers read (read on the driver, on threads); each other file is one row error, written here.

    Spark reads the files natively, but for those ``streamed`` names (``file_key``: Spark could not
    read them): the Python data source reads those a row group at a time, each row group that does
    not read a row error, as on Ray.
    """
    from connectors.registry import parquet_footers, unreadable_parquet
    from dataflow.runtime.stats import batch_key

    footers = parquet_footers(files, storage, cache and cache.as_options())
    bad = [unreadable_parquet(f, got) for f, got in zip(files, footers) if not isinstance(got, list)]
    if bad:
        write_read_errors(side, "spark-footers", batch_key([b.source for b in bad]), bad, read.counted)
        files = [f for f, got in zip(files, footers) if isinstance(got, list)]
        if not files:
            return spark.createDataFrame([], T.StructType([T.StructField(SOURCE, T.StringType())]))
    native = [f for f in files if file_key(f) not in streamed] if _native(spark, read) else []
    if native:
        df = scan.load(spark.read.format("parquet"), native, [_hadoop_path(f, True) for f in native])
        own = F.concat(_our_path(), F.lit(ROW), F.col("_metadata.row_index").cast("string"))
        if read.source.options.get("keep_lineage") and SOURCE in df.columns:
            own = col(SOURCE)
        df = df.select(own.alias(SOURCE), *[col(c) for c in df.columns if c != SOURCE])
        rest = [f for f in files if f not in native]
        if not rest:
            return df
        names = df.columns
        # The Arrow types Spark reads as its own: the streamed rows take the native frame's types, by name.
        streamed_df = _python_source(spark, rest, "parquet", df.schema, read, side, storage, cache, columns=names)
        return df.unionByName(streamed_df)
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    from connectors.registry import filesystem, strip_scheme

    with filesystem(files[0], storage).open(strip_scheme(files[0]), "rb") as f:
        arrow = pq.read_schema(f)
    names = [SOURCE, *[n for n in arrow.names if n != SOURCE]]
    fields = [pa.field(SOURCE, pa.string()), *[arrow.field(n) for n in names[1:]]]
    return _python_source(spark, files, "parquet", from_arrow_schema(pa.schema(fields)), read, side, storage, cache, columns=names)


def _refuse_working(result: DataFrame | Checked) -> DataFrame | Checked:
    """Rows holding a value in a column spelled like dataflow's working columns flagged as the read's row errors; those columns left out.

    The check comes first among the read's cases, and the frame the error write reads (``errors_from``) is flagged the same way.
    """
    df = result.df if isinstance(result, Checked) else result
    own = {BAD, *result.helpers} if isinstance(result, Checked) else set()  # the read's own working columns
    working = [c for c in df.columns if is_working(c) and c not in own]
    if not working:
        return result
    held = functools.reduce(operator.or_, [col(c).isNotNull() for c in working])
    cases = [(f"{sql_name(c)} IS NOT NULL", "ValueError", sql_literal(working_column_reason(c))) for c in working]
    if not isinstance(result, Checked):
        return Checked(df.withColumn(BAD, held), cases, helpers=tuple(working))

    def flagged(frame: DataFrame | Checked) -> DataFrame | Checked:
        if isinstance(frame, Checked):
            return Checked(frame.df.withColumn(BAD, F.col(BAD) | held), [*cases, *frame.cases], helpers=(*frame.helpers, *working))
        return frame.withColumn(BAD, F.col(BAD) | held)

    # A new Checked: it flags more rows than the read did, so neither ``counted`` nor ``flag`` carries over; its error frame is flagged alike.
    return replace(flagged(result), errors_from=(lambda: flagged(result.errors_from())) if result.errors_from is not None else None)


def read_source(
    spark, read: SparkRead, files: list[str], side, storage: dict[str, dict[str, Any]], cache: CacheSettings | None = None, fast_json: frozenset[str] = frozenset(),
    key: LineKey | None = None, count: Callable[[DataFrame, Column], DataFrame] | None = None, streamed: frozenset[str] = frozenset(),
) -> DataFrame | Checked:
    """Return the rows of ``files``: a ``__source__`` column first, then the data.

    For text and jsonl the result is ``Checked``: the rows, with the lines that are not UTF-8 (or,
    for jsonl, do not parse) flagged.
    ``cache`` (a ``CacheSettings``): the Python data source reads remote files through the cache tier.
    ``fast_json``: the files of ``files`` whose JSON lines are read by ``json_fast`` (those
    ``json_fast.aligned`` gave; the caller runs the job's actions inside
    ``json_fast.one_task_per_file``), the others by the exact path; ``key``: with it, and every
    file read by ``json_fast``, the ``__source__`` of those lines is its numeric key (``lineage_key``). ``count(rows, bad)``: a
    read that can count its rows and bad rows as they are read does so through it (the result is
    then ``Checked.counted``). ``streamed``: files (``file_key``) the Python data source reads, not
    Spark natively (a job stopped at them: a corrupt Parquet page, a file gone while it ran).
    """
    if read.source.in_memory:  # rows this process holds (dataflow.memory), no files
        from dataflow.engines.spark.memory_io import held_frame

        return held_frame(spark, read.source)
    if native_enabled(spark) and read.remote:
        apply_settings(spark, s3a_settings(storage.get("s3", {})))
    fmt = read.source.format
    if fmt == "parquet":
        return _refuse_working(_parquet(spark, read, files, side, storage, cache, streamed))
    if fmt == "csv":
        return _refuse_working(_csv(spark, read, files, side, storage, cache))
    if fmt == "jsonl":
        return _refuse_working(_jsonl(spark, read, files, side, storage, cache, fast=fast_json, key=key, count=count, streamed=streamed))
    if read.source.options.get("split", "file") == "line":
        skip_empty = read.source.options.get("skip_empty", True)

        def lines(only_invalid: bool) -> DataFrame:
            df = _lines(spark, read, files, side, storage, cache, only_invalid=only_invalid, streamed=streamed)
            return df.where(~F.col("text").rlike(r"^\s*$")) if skip_empty else df

        return _undecodable(lines(False), lambda: lines(True))
    return _whole(spark, read, files, side, storage, cache, streamed)
