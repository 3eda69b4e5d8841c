"""Cross-engine conformance: every table op (and the semantic dedup), run by each engine over the same data, gives the same rows.

``EngineContract`` holds the cases; a test class subclasses it and provides an ``engine`` fixture
that names the engine and starts its session (``tests/integration/engines/test_spark_conformance.py``
runs it on Ray and on Spark). Each case states its exact expected rows, so both engines are held
to one result: row order is normalized, floats compare to 1e-9, and the NaN that Ray's numpy
batches use for null numbers counts as null.
"""
from __future__ import annotations

import json
import math
import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

QUIET = RunOptions(progress=False)

LINKS = [
    {"link": "a", "ts": 0, "rx": -3.0, "crc": 1, "state": "up"},
    {"link": "a", "ts": 1800, "rx": -3.5, "crc": 2, "state": "up"},
    {"link": "a", "ts": 3600, "rx": -4.0, "crc": None, "state": "down"},
    {"link": "b", "ts": 0, "rx": -2.0, "crc": 0, "state": "up"},
    {"link": "b", "ts": 3600, "rx": None, "crc": 5, "state": "up"},
    {"link": "c", "ts": 7200, "rx": -10.0, "crc": 10, "state": None},
]
JSON_LINES = [
    '{"ts": 10, "link": "a", "rx": -3, "ok": true, "meta": {"v": 1}}',
    "not json",
    "[1, 2]",
    '{"ts": "late", "link": "b"}',
    '{"link": 5, "rx": null}',
    "",
    '{"ts": 1.5}',
]
SYSLOG_LINES = [
    "sw1 %LINK-3-UPDOWN: Interface Eth1/1 changed state to down",
    "sw2 %OPTIC-4-REMOVE: module removed",
    "garbage without a tag",
    "sw1 %CRC-2-ALARM: port Eth1/7 crc",
]
SYSLOG_PATTERN = r"(?P<host>\S+) %(?P<facility>[A-Z]+)-(?P<severity>\d)-(?P<event>[A-Z_]+):(?:.* (?P<port>Eth\S+))?"
CASTS = [{"a": "12", "b": "true"}, {"a": " 7 ", "b": "no"}, {"a": "abc", "b": "yes"}, {"a": None, "b": "1"}, {"a": "1e3", "b": "0"}]
LABELS_CSV = "link,label,rx\na,gold,x\nc,bad,y\nd,none,z\n"
# Null keys and a skewed key: "hot" holds half the rows.
SKEW = [{"k": "hot" if i % 2 == 0 else (None if i % 10 == 1 else f"k{i % 7}"), "v": i, "t": 3 * i} for i in range(40)]
SKEW_LABELS = [{"k": "hot", "label": "H"}, {"k": "k3", "label": "T"}, {"k": None, "label": "N"}, {"k": "zz", "label": "Z"}]
SKEW_SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("t", pa.int64())])


def semantic_vectors(seed: int = 0, straddling: bool = False, d: int = 16, topics: int = 6, per: int = 20) -> np.ndarray:
    """Unit embeddings in well-separated topics; every 4th document has a near copy (every 8th two).

    Documents of a topic are far apart (cosine < 0.93); a copy is within 0.99 of its original.
    ``straddling`` adds a near-duplicate pair (cosine 0.97) on the midpoint between topics 0 and 1,
    one on each side: the pair k-means splits (SemDedup's trade-off).
    """
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0][:topics]
    rows = [basis[t] + 0.7 * rng.normal(size=d) / np.sqrt(d) for t in range(topics) for _ in range(per)]
    rows += [rows[i] + 0.02 * rng.normal(size=d) / np.sqrt(d) for i in range(0, topics * per, 4) for _ in range(1 + (i % 8 == 0))]
    if straddling:
        mid, side = (basis[0] + basis[1]) / np.sqrt(2), (basis[0] - basis[1]) / np.sqrt(2)
        rows += [mid + 0.12 * side, mid - 0.12 * side]
    out = np.array(rows, dtype=np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def semantic_reference(vectors: np.ndarray, sources: list[str], threshold: float) -> list[int]:
    """Exact all-pairs semantic dedup, written plainly: the row kept per group (smallest source)."""
    parent = list(range(len(vectors)))

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for start in range(0, len(vectors), 1024):
        for i, j in zip(*np.nonzero(vectors[start : start + 1024] @ vectors.T >= threshold)):
            if start + i < j:
                parent[root(int(start + i))] = root(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(len(vectors)):
        groups.setdefault(root(i), []).append(i)
    return sorted(min(g, key=lambda i: sources[i]) for g in groups.values())


# A JSONL source with one line that is not UTF-8 and one that is not JSON: one row error each.
RAW_JSONL = b'{"ts": 1, "link": "a"}\n{"ts": 2, "link": "b\xff"}\n{"ts": 3, "link":\n\n{"ts": 4, "link": "d \xc3\xa9"}\n'


@dataclass
class Data:
    """The inputs of one case, written under the test's tmp folder."""

    links: str
    json_lines: str
    syslog: str
    casts: str
    labels: str
    jsonl: str
    skew: str = ""
    skew_labels: str = ""
    empty: str = ""
    semantic: str = ""
    straddle: str = ""

    def row(self, i: int, **extra: Any) -> dict[str, Any]:
        return {**LINKS[i], "__source__": f"{self.links}#row={i}", **extra}


def _same_link(i: int) -> list[int]:
    return [j for j, r in enumerate(LINKS) if r["link"] == LINKS[i]["link"]]


def _self_match(d: Data, i: int, j: int, k: int) -> dict[str, Any]:
    """Row ``i`` joined with row ``j`` of the same table: a left row matched several times gets ``#match=k``."""
    ident = f"{d.links}#row={i}" + (f"#match={k}" if len(_same_link(i)) > 1 else "")
    return d.row(i, __source__=ident, **{f"{c}_right": LINKS[j][c] for c in ("ts", "rx", "crc", "state")})


def write_data(root: pathlib.Path) -> Data:
    """Write the conformance inputs: a Parquet table, JSON and syslog text, strings to cast, a label CSV."""
    root.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("link", pa.string()), ("ts", pa.int64()), ("rx", pa.float64()), ("crc", pa.int64()), ("state", pa.string())])
    pq.write_table(pa.Table.from_pylist(LINKS, schema=schema), root / "links.parquet")
    (root / "tele.txt").write_text("\n".join(JSON_LINES) + "\n")
    (root / "syslog.txt").write_text("\n".join(SYSLOG_LINES) + "\n")
    pq.write_table(pa.Table.from_pylist(CASTS), root / "casts.parquet")
    (root / "labels.csv").write_text(LABELS_CSV)
    (root / "raw.jsonl").write_bytes(RAW_JSONL)
    pq.write_table(pa.Table.from_pylist(SKEW, schema=SKEW_SCHEMA), root / "skew.parquet", row_group_size=8)  # 5 row groups: 5 read tasks
    pq.write_table(pa.Table.from_pylist(SKEW_LABELS), root / "skew_labels.parquet")
    pq.write_table(SKEW_SCHEMA.empty_table(), root / "empty.parquet")
    for name, straddling in (("semantic", False), ("straddle", True)):
        vectors = semantic_vectors(straddling=straddling)
        table = pa.table({"doc": np.arange(len(vectors)), "embedding": pa.array(list(vectors), pa.list_(pa.float32()))})
        pq.write_table(table, root / f"{name}.parquet", row_group_size=64)  # 3 row groups: 3 read tasks
    return Data(
        str(root / "links.parquet"), str(root / "tele.txt"), str(root / "syslog.txt"), str(root / "casts.parquet"), str(root / "labels.csv"),
        str(root / "raw.jsonl"), str(root / "skew.parquet"), str(root / "skew_labels.parquet"), str(root / "empty.parquet"),
        str(root / "semantic.parquet"), str(root / "straddle.parquet"),
    )


@dataclass
class Case:
    """A pipeline fragment, its input, and the rows (and row errors) every engine must produce."""

    source: str
    steps: list[dict[str, Any]]
    expected: Callable[[Data], list[dict[str, Any]]]
    errors: Callable[[Data], list[tuple[str, str, str]]] = lambda d: []
    sources: dict[str, Any] = field(default_factory=dict)


def _text(uri: str) -> dict[str, Any]:
    return {"uri": uri, "format": "text", "options": {"split": "line"}}


def _with_columns_rows(d: Data) -> list[dict[str, Any]]:
    extra = [
        dict(half=0.5, ratio=None, tag="ok", label="A-1", fill=1, r=-4.5, fl=-3, n=2, dbl=1.0, m=1, flag=True),
        dict(half=1.0, ratio=-3.5, tag="low", label="A-2", fill=2, r=-5.3, fl=-4, n=2, dbl=2.0, m=2, flag=False),
        dict(half=None, ratio=None, tag="low", label=None, fill=-1, r=-6.0, fl=-4, n=4, dbl=None, m=None, flag=None),
        dict(half=0.0, ratio=2.0, tag="ok", label="B-0", fill=0, r=-3.0, fl=-2, n=2, dbl=0.0, m=0, flag=True),
        dict(half=2.5, ratio=None, tag="none", label="B-5", fill=5, r=None, fl=None, n=2, dbl=5.0, m=2, flag=False),
        dict(half=5.0, ratio=-10 / 9, tag="low", label="C-10", fill=10, r=-15.0, fl=-10, n=None, dbl=10.0, m=1, flag=False),
    ]
    return [d.row(i, **e) for i, e in enumerate(extra)]


def _ranked_windows() -> list[dict]:
    """Each LINKS row's ranking and framed window columns, computed here from its key's rows (in ts order, no ties)."""
    out = []
    for r in LINKS:
        same = [x for x in LINKS if x["link"] == r["link"]]
        pos, n = same.index(r), len(same)
        crcs = [x["crc"] for x in same if x["crc"] is not None]
        out.append({"last_crc": crcs[-1] if crcs else None, "first_rx": same[0]["rx"], "rk": pos + 1, "nt": 1 + pos * 2 // n,
                    "pr": pos / (n - 1) if n > 1 else 0.0, "crcs": len(set(crcs)), "second_rx": same[1]["rx"] if n > 1 else None})
    return out


def _compound_windows() -> list[dict]:
    """Each LINKS row's compound window columns, computed here from its key's rows (LINKS lists each key's rows in ts order)."""
    out = []
    for r in LINKS:
        same = [x for x in LINKS if x["link"] == r["link"]]
        pos = same.index(r)
        prev = same[pos - 1]["rx"] if pos else None
        total = sum(x["crc"] for x in same if x["crc"] is not None)
        out.append({"step": None if prev is None or r["rx"] is None else r["rx"] - prev, "span": max(x["ts"] for x in same) - min(x["ts"] for x in same),
                    "share": None if r["crc"] is None or not total else r["crc"] / total, "rn0": pos})
    return out


def _windows(d: Data) -> list[dict[str, Any]]:
    slope = -0.5 / 1800
    spec = [  # link, start, n, lo, slope, source row (overlapping windows: the start keeps identities unique)
        ("a", -1800, 1, -3.0, None, 0), ("a", 0, 2, -3.5, slope, 0), ("a", 1800, 2, -4.0, slope, 1), ("a", 3600, 1, -4.0, None, 2),
        ("b", -1800, 1, -2.0, None, 3), ("b", 0, 1, -2.0, None, 3), ("b", 1800, 1, None, None, 4), ("b", 3600, 1, None, None, 4),
        ("c", 5400, 1, -10.0, None, 5), ("c", 7200, 1, -10.0, None, 5),
    ]
    return [
        {"link": k, "window_start": s, "window_end": s + 3600, "n": n, "lo": lo, "sl": sl, "__source__": f"{d.links}#row={r}#window={s}"}
        for k, s, n, lo, sl, r in spec
    ]


def _skew_groups(d: Data, key) -> dict[Any, list[int]]:
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(SKEW):
        groups.setdefault(key(r), []).append(i)
    return groups


def _skew_source(d: Data, rows: list[int]) -> str:
    return min(f"{d.skew}#row={i}" for i in rows)


def _skew_aggregate(d: Data) -> list[dict[str, Any]]:
    return [{"k": k, "n": len(g), "s": sum(SKEW[i]["v"] for i in g), "__source__": _skew_source(d, g)} for k, g in _skew_groups(d, lambda r: r["k"]).items()]


def _skew_window(d: Data) -> list[dict[str, Any]]:
    groups = _skew_groups(d, lambda r: (r["k"], r["t"] // 30 * 30))
    return [{"k": k, "window_start": w, "window_end": w + 30, "n": len(g), "__source__": _skew_source(d, g)} for (k, w), g in groups.items()]


def _skew_join(d: Data) -> list[dict[str, Any]]:
    labels = {r["k"]: r["label"] for r in SKEW_LABELS if r["k"] is not None}
    left = [{**r, "label": labels.get(r["k"]), "__source__": f"{d.skew}#row={i}"} for i, r in enumerate(SKEW)]
    seen = {r["k"] for r in SKEW}
    right = [{"k": r["k"], "v": None, "t": None, "label": r["label"], "__source__": f"{d.skew_labels}#row={j}"}
             for j, r in enumerate(SKEW_LABELS) if r["k"] is None or r["k"] not in seen]
    return left + right


def _semantic(uri: str, straddling: bool, extra: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """The reference's rows of a semantic dedup at 0.95, plus the rows ``extra`` (kept by k-means only)."""
    vectors = semantic_vectors(straddling=straddling)
    kept = semantic_reference(vectors, [f"{uri}#row={i}" for i in range(len(vectors))], 0.95)
    return [{"doc": i, "__source__": f"{uri}#row={i}"} for i in sorted({*kept, *extra})]


def _semantic_steps(**params: Any) -> list[dict[str, Any]]:
    return [{"op": "text.dedup_semantic", "params": {"threshold": 0.95, **params}}, {"op": "table.select", "params": {"columns": ["doc"]}}]


CASES: dict[str, Case] = {
    "select": Case("links", [{"op": "table.select", "params": {"columns": ["link", "rx"]}}],
                   lambda d: [{"link": r["link"], "rx": r["rx"], "__source__": f"{d.links}#row={i}"} for i, r in enumerate(LINKS)]),
    "filter_rows": Case(
        "links",
        [{"op": "table.filter_rows", "params": {"where": "rx < :lim AND link IN ('a', 'b') OR crc IS NULL", "vars": {"lim": -2.5}}}],
        lambda d: [d.row(i) for i in (0, 1, 2)],
    ),
    "with_columns": Case(
        "links",
        [{"op": "table.with_columns", "params": {"columns": {
            "half": "crc / 2", "ratio": "rx / (crc - 1)",
            "tag": "CASE WHEN rx < -3.2 THEN 'low' WHEN rx IS NULL THEN 'none' ELSE 'ok' END",
            "label": "upper(link) || '-' || cast(crc as string)", "fill": "coalesce(crc, -1)", "r": "round(rx * 1.5, 1)",
            "fl": "floor(rx)", "n": "length(state)", "dbl": "half * 2", "m": "crc % 3", "flag": "NOT (crc > 1)",
        }}}],
        _with_columns_rows,
    ),
    "with_columns_twice": Case(  # the second step reads a column the first made, in one fused stage
        "links",
        [{"op": "table.with_columns", "params": {"columns": {"x": "coalesce(crc, 0) * 2"}}},
         {"op": "table.with_columns", "params": {"columns": {"y": "x + 1"}}}],
        lambda d: [d.row(i, x=2 * (r["crc"] or 0), y=2 * (r["crc"] or 0) + 1) for i, r in enumerate(LINKS)],
    ),
    "filter_rows_twice": Case(
        "links",
        [{"op": "table.filter_rows", "params": {"where": "crc IS NOT NULL"}}, {"op": "table.filter_rows", "params": {"where": "crc < :lim", "vars": {"lim": 5}}}],
        lambda d: [d.row(i) for i in (0, 1, 3)],
    ),
    "with_columns_literals_and_predicates": Case(  # Spark SQL string literals: backslash escapes
        "links",
        [{"op": "table.with_columns", "params": {"columns": {
            "q": "'it\\'s ' || state || ' \\\\ ok'", "p": "power(crc, 2)", "lk": "link LIKE 'a%'",
            "bt": "ts BETWEEN 1000 AND 4000", "nb": "ts NOT BETWEEN 1000 AND 4000", "neg": "-rx - 1",
        }}}],
        lambda d: [d.row(i, q=None if s is None else f"it's {s} \\ ok", p=None if c is None else float(c * c), lk=lk, bt=bt, nb=not bt, neg=None if r is None else -r - 1)
                   for i, (s, c, r, lk, bt) in enumerate((r["state"], r["crc"], r["rx"], r["link"].startswith("a"), 1000 <= r["ts"] <= 4000) for r in LINKS)],
    ),
    "parse_json": Case(
        "json",
        [{"op": "table.parse_json", "params": {"fields": {"ts": "long", "link": "string", "rx": "double", "ok": "boolean", "meta": "string"}}}],
        lambda d: [
            {"__source__": f"{d.json_lines}#line=1", "text": JSON_LINES[0], "ts": 10, "link": "a", "rx": -3.0, "ok": True, "meta": '{"v":1}'},
            {"__source__": f"{d.json_lines}#line=5", "text": JSON_LINES[4], "ts": None, "link": "5", "rx": None, "ok": None, "meta": None},
        ],
        lambda d: [(f"{d.json_lines}#line=2", "table.parse_json", "JSONDecodeError"), (f"{d.json_lines}#line=3", "table.parse_json", "TypeError"),
                   (f"{d.json_lines}#line=4", "table.parse_json", "TypeError"), (f"{d.json_lines}#line=7", "table.parse_json", "TypeError")],
    ),
    "parse_json_then_narrowing_steps": Case(  # on Spark, kept rows carry only what later steps read; errors still see it all
        "json",
        [{"op": "table.parse_json", "params": {"fields": {"ts": "long", "link": "string", "rx": "double"}}},
         {"op": "table.with_columns", "params": {"columns": {"chars": "length(text)"}}},
         {"op": "table.select", "params": {"columns": ["link", "chars"]}}],
        lambda d: [{"__source__": f"{d.json_lines}#line=1", "link": "a", "chars": len(JSON_LINES[0])},
                   {"__source__": f"{d.json_lines}#line=5", "link": "5", "chars": len(JSON_LINES[4])}],
        lambda d: [(f"{d.json_lines}#line=2", "table.parse_json", "JSONDecodeError"), (f"{d.json_lines}#line=3", "table.parse_json", "TypeError"),
                   (f"{d.json_lines}#line=4", "table.parse_json", "TypeError"), (f"{d.json_lines}#line=7", "table.parse_json", "TypeError")],
    ),
    "jsonl_source_bad_lines": Case(
        "jsonl",
        [{"op": "table.select", "params": {"columns": ["ts", "link"]}}],
        lambda d: [{"__source__": f"{d.jsonl}#line=1", "ts": 1, "link": "a"}, {"__source__": f"{d.jsonl}#line=5", "ts": 4, "link": "d é"}],
        lambda d: [(f"{d.jsonl}#line=2", "read", "UnicodeDecodeError"), (f"{d.jsonl}#line=3", "read", "JSONDecodeError")],
    ),
    "parse_regex_errors": Case(
        "syslog",
        [{"op": "table.parse_regex", "params": {"pattern": SYSLOG_PATTERN}}],
        lambda d: [
            {"__source__": f"{d.syslog}#line=1", "text": SYSLOG_LINES[0], "host": "sw1", "facility": "LINK", "severity": "3", "event": "UPDOWN", "port": "Eth1/1"},
            {"__source__": f"{d.syslog}#line=2", "text": SYSLOG_LINES[1], "host": "sw2", "facility": "OPTIC", "severity": "4", "event": "REMOVE", "port": None},
            {"__source__": f"{d.syslog}#line=4", "text": SYSLOG_LINES[3], "host": "sw1", "facility": "CRC", "severity": "2", "event": "ALARM", "port": "Eth1/7"},
        ],
        lambda d: [(f"{d.syslog}#line=3", "table.parse_regex", "ValueError")],
    ),
    "parse_regex_named_patterns": Case(
        "syslog",
        [{"op": "table.parse_regex", "params": {"on_mismatch": "null", "pattern_column": "vendor", "pattern": {
            "updown": r"(?P<host>\S+) %LINK-\d-(?P<event>[A-Z]+):.*Interface (?P<port>\S+)",
            "crc": r"(?P<host>\S+) %CRC-\d-(?P<event>[A-Z]+): port (?P<port>\S+) (?P<what>\w+)"}}}],
        lambda d: [
            {"__source__": f"{d.syslog}#line=1", "text": SYSLOG_LINES[0], "host": "sw1", "event": "UPDOWN", "port": "Eth1/1", "what": None, "vendor": "updown"},
            {"__source__": f"{d.syslog}#line=2", "text": SYSLOG_LINES[1], "host": None, "event": None, "port": None, "what": None, "vendor": None},
            {"__source__": f"{d.syslog}#line=3", "text": SYSLOG_LINES[2], "host": None, "event": None, "port": None, "what": None, "vendor": None},
            {"__source__": f"{d.syslog}#line=4", "text": SYSLOG_LINES[3], "host": "sw1", "event": "ALARM", "port": "Eth1/7", "what": "crc", "vendor": "crc"},
        ],
    ),
    "parse_regex_drop": Case(
        "syslog",
        [{"op": "table.parse_regex", "params": {"pattern": r"-(?P<event>[A-Z_]+): .*port (?P<port>\S+)", "on_mismatch": "drop"}}],
        lambda d: [{"__source__": f"{d.syslog}#line=4", "text": SYSLOG_LINES[3], "event": "ALARM", "port": "Eth1/7"}],
    ),
    "cast": Case(
        "casts",
        [{"op": "table.cast", "params": {"columns": {"a": "long", "b": "boolean"}}}],
        lambda d: [{"__source__": f"{d.casts}#row=0", "a": 12, "b": True}, {"__source__": f"{d.casts}#row=1", "a": 7, "b": False},
                   {"__source__": f"{d.casts}#row=3", "a": None, "b": True}],
        lambda d: [(f"{d.casts}#row=2", "table.cast", "ValueError"), (f"{d.casts}#row=4", "table.cast", "ValueError")],
    ),
    "dedup_last": Case("links", [{"op": "table.dedup", "params": {"keys": ["link"], "order_by": "ts", "keep": "last"}}],
                       lambda d: [d.row(i) for i in (2, 4, 5)]),
    "dedup_all_columns": Case(
        "links",
        [{"op": "table.select", "params": {"columns": ["link"]}}, {"op": "table.dedup"}],
        lambda d: [{"link": k, "__source__": f"{d.links}#row={i}"} for k, i in (("a", 0), ("b", 3), ("c", 5))],
    ),
    "aggregate": Case(
        "links",
        [{"op": "table.aggregate", "params": {"keys": ["link"], "aggregations": {
            "n": "count(*)", "k": "count(crc)", "s": "sum(crc)", "mu": "mean(rx)", "lo": "min(rx)", "hi": "max(ts)",
            "sd": "stddev(rx)", "sl": "slope(rx, ts)"}}}],
        lambda d: [
            {"link": "a", "n": 3, "k": 2, "s": 3, "mu": -3.5, "lo": -4.0, "hi": 3600, "sd": 0.5, "sl": -0.5 / 1800, "__source__": f"{d.links}#row=0"},
            {"link": "b", "n": 2, "k": 2, "s": 5, "mu": -2.0, "lo": -2.0, "hi": 3600, "sd": None, "sl": None, "__source__": f"{d.links}#row=3"},
            {"link": "c", "n": 1, "k": 1, "s": 10, "mu": -10.0, "lo": -10.0, "hi": 7200, "sd": None, "sl": None, "__source__": f"{d.links}#row=5"},
        ],
    ),
    "aggregate_all_rows": Case(
        "links",
        [{"op": "table.aggregate", "params": {"aggregations": {"n": "count(*)", "s": "sum(crc * 2)"}}}],
        lambda d: [{"n": 6, "s": 36, "__source__": f"{d.links}#row=0"}],
    ),
    "aggregate_regression_and_percentiles": Case(
        "links",
        [{"op": "table.aggregate", "params": {"keys": ["link"], "aggregations": {
            "n": "regr_count(rx, ts)", "sxx": "regr_sxx(rx, ts)", "syy": "regr_syy(rx, ts)", "sxy": "regr_sxy(rx, ts)",
            "sl": "regr_slope(rx, ts)", "med": "percentile_approx(rx, 0.5)", "p90": "percentile_approx(crc, 0.9)", "sd": "stddev_samp(rx)"}}}],
        lambda d: [
            {"link": "a", "n": 3, "sxx": 6_480_000.0, "syy": 0.5, "sxy": -1800.0, "sl": -0.5 / 1800, "med": -3.5, "p90": 2, "sd": 0.5, "__source__": f"{d.links}#row=0"},
            {"link": "b", "n": 1, "sxx": 0.0, "syy": 0.0, "sxy": 0.0, "sl": None, "med": -2.0, "p90": 5, "sd": None, "__source__": f"{d.links}#row=3"},
            {"link": "c", "n": 1, "sxx": 0.0, "syy": 0.0, "sxy": 0.0, "sl": None, "med": -10.0, "p90": 10, "sd": None, "__source__": f"{d.links}#row=5"},
        ],
    ),
    "window_columns": Case(
        "links",
        [{"op": "table.window_columns", "params": {"keys": ["link"], "order_by": "ts", "columns": {
            "last": "max(ts)", "prev": "lag(rx)", "nxt": "lead(crc, 1)", "back2": "lag(ts, 2)", "rn": "row_number()", "med": "percentile_approx(rx, 0.5)"}}}],
        lambda d: [d.row(i, **e) for i, e in enumerate([
            dict(last=3600, prev=None, nxt=2, back2=None, rn=1, med=-3.5), dict(last=3600, prev=-3.0, nxt=None, back2=None, rn=2, med=-3.5),
            dict(last=3600, prev=-3.5, nxt=None, back2=0, rn=3, med=-3.5), dict(last=3600, prev=None, nxt=5, back2=None, rn=1, med=-2.0),
            dict(last=3600, prev=-2.0, nxt=None, back2=None, rn=2, med=-2.0), dict(last=7200, prev=None, nxt=None, back2=None, rn=1, med=-10.0),
        ])],
    ),
    "window_columns_all_rows": Case(
        "links",
        [{"op": "table.window_columns", "params": {"columns": {"n": "count(*)", "hi": "max(rx)"}}}],
        lambda d: [d.row(i, n=6, hi=-2.0) for i in range(len(LINKS))],
    ),
    "window_columns_compound": Case(
        "links",
        [{"op": "table.window_columns", "params": {"keys": ["link"], "order_by": "ts", "columns": {
            "step": "rx - lag(rx)", "span": "max(ts) - min(ts)", "share": "crc / sum(crc)", "rn0": "row_number() - 1"}}}],
        lambda d: [d.row(i, **e) for i, e in enumerate(_compound_windows())],
    ),
    "window_columns_ranks": Case(
        "links",
        [{"op": "table.window_columns", "params": {"keys": ["link"], "order_by": "ts", "columns": {
            "last_crc": "last(crc, true)", "first_rx": "first(rx)", "rk": "rank()", "nt": "ntile(2)", "pr": "percent_rank()",
            "crcs": "count(DISTINCT crc)", "second_rx": "nth_value(rx, 2)"}}}],
        lambda d: [d.row(i, **e) for i, e in enumerate(_ranked_windows())],
    ),
    "unix_timestamp": Case(
        "links",
        [{"op": "table.with_columns", "params": {"columns": {
            "t": "unix_timestamp(CASE WHEN link = 'a' THEN '2026-01-01T01:00:05+01:00' ELSE state END, 'yyyy-MM-dd\\'T\\'HH:mm:ssXXX')",
            "u": "unix_timestamp('2026-01-02 03:04:05', 'yyyy-MM-dd HH:mm:ss')",
            "s": "cast(rx AS string)"}}}],
        lambda d: [d.row(i, t=1767225605 if LINKS[i]["link"] == "a" else None, u=1767323045,
                         s=None if LINKS[i]["rx"] is None else repr(LINKS[i]["rx"]))
                   for i in range(len(LINKS))],
    ),
    "window_sliding": Case(
        "links",
        [{"op": "table.window_aggregate", "params": {"keys": ["link"], "size": "1h", "slide": "30m",
                                                     "aggregations": {"n": "count(*)", "lo": "min(rx)", "sl": "slope(rx)"}}}],
        _windows,
    ),
    "window_tumbling": Case(
        "links",
        [{"op": "table.window_aggregate", "params": {"keys": ["link"], "size": "2h", "aggregations": {"n": "count(*)", "crc": "sum(crc)"}}}],
        lambda d: [
            {"link": "a", "window_start": 0, "window_end": 7200, "n": 3, "crc": 3, "__source__": f"{d.links}#row=0"},
            {"link": "b", "window_start": 0, "window_end": 7200, "n": 2, "crc": 5, "__source__": f"{d.links}#row=3"},
            {"link": "c", "window_start": 7200, "window_end": 14400, "n": 1, "crc": 10, "__source__": f"{d.links}#row=5"},
        ],
    ),
    "join_left": Case(
        "links",
        [{"op": "table.join", "params": {"right": "labels", "keys": ["link"], "how": "left"}}],
        lambda d: [d.row(i, label={"a": "gold", "c": "bad"}.get(LINKS[i]["link"]), rx_right={"a": "x", "c": "y"}.get(LINKS[i]["link"])) for i in range(6)],
        sources={"labels": "labels"},
    ),
    "join_one_to_many": Case(
        "links",
        [{"op": "table.join", "params": {"right": "again", "keys": ["link"], "how": "inner"}}],
        lambda d: [_self_match(d, i, j, k) for i in range(6) for k, j in enumerate(_same_link(i), start=1)],
        sources={"again": "links"},
    ),
    "join_anti": Case(
        "links",
        [{"op": "table.join", "params": {"right": "labels", "keys": ["link"], "how": "anti"}}],
        lambda d: [d.row(i) for i in (3, 4)],
        sources={"labels": "labels"},
    ),
    "aggregate_null_and_skewed_keys": Case(
        "skew", [{"op": "table.aggregate", "params": {"keys": ["k"], "aggregations": {"n": "count(*)", "s": "sum(v)"}}}], _skew_aggregate,
    ),
    "dedup_null_and_skewed_keys": Case(
        "skew", [{"op": "table.dedup", "params": {"keys": ["k"], "order_by": "v", "keep": "last"}}],
        lambda d: [{**SKEW[max(g)], "__source__": f"{d.skew}#row={max(g)}"} for g in _skew_groups(d, lambda r: r["k"]).values()],
    ),
    "window_null_and_skewed_keys": Case(
        "skew", [{"op": "table.window_aggregate", "params": {"keys": ["k"], "size": 30, "time_column": "t", "aggregations": {"n": "count(*)"}}}], _skew_window,
    ),
    "join_full_null_and_skewed_keys": Case(
        "skew", [{"op": "table.join", "params": {"right": "labels", "keys": ["k"], "how": "full"}}], _skew_join, sources={"labels": "skew_labels"},
    ),
    "aggregate_empty_input": Case("empty", [{"op": "table.aggregate", "params": {"keys": ["k"], "aggregations": {"n": "count(*)"}}}], lambda d: []),
    "aggregate_all_rows_empty_input": Case("empty", [{"op": "table.aggregate", "params": {"aggregations": {"n": "count(*)", "s": "sum(v)"}}}],
                                           lambda d: [{"n": 0, "s": None, "__source__": None}]),
    "dedup_empty_input": Case("empty", [{"op": "table.dedup", "params": {"keys": ["k"], "order_by": "v"}}], lambda d: []),
    "window_empty_input": Case("empty", [{"op": "table.window_aggregate", "params": {"keys": ["k"], "size": 30, "time_column": "t", "aggregations": {"n": "count(*)"}}}],
                               lambda d: []),
    "join_right_empty_input": Case(
        "empty", [{"op": "table.join", "params": {"right": "labels", "keys": ["k"], "how": "right"}}],
        lambda d: [{"k": r["k"], "v": None, "t": None, "label": r["label"], "__source__": f"{d.skew_labels}#row={j}"} for j, r in enumerate(SKEW_LABELS)],
        sources={"labels": "skew_labels"},
    ),
    "semantic_dedup_exact": Case("semantic", _semantic_steps(clusters=1), lambda d: _semantic(d.semantic, False)),
    # Well-separated topics: k-means keeps exactly the rows exact all-pairs keeps.
    "semantic_dedup_kmeans": Case("semantic", _semantic_steps(clusters=6), lambda d: _semantic(d.semantic, False)),
    # A duplicate pair split by a cluster boundary: both kept; every other group as exact.
    "semantic_dedup_kmeans_split_pair": Case("straddle", _semantic_steps(clusters=6), lambda d: _semantic(d.straddle, True, extra=(166,))),
    "join_empty_input": Case("empty", [{"op": "table.join", "params": {"right": "labels", "keys": ["k"], "how": "left"}}], lambda d: [],
                             sources={"labels": "skew_labels"}),
}


def _uri(d: Data, name: str) -> dict[str, Any]:
    return {
        "links": {"uri": d.links, "format": "parquet"},
        "json": _text(d.json_lines),
        "syslog": _text(d.syslog),
        "casts": {"uri": d.casts, "format": "parquet"},
        "labels": {"uri": d.labels, "format": "csv"},
        "jsonl": {"uri": d.jsonl, "format": "jsonl"},
        "skew": {"uri": d.skew, "format": "parquet"},
        "skew_labels": {"uri": d.skew_labels, "format": "parquet"},
        "empty": {"uri": d.empty, "format": "parquet"},
        "semantic": {"uri": d.semantic, "format": "parquet"},
        "straddle": {"uri": d.straddle, "format": "parquet"},
    }[name]


def _normal(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def _same_value(actual: Any, expected: Any) -> bool:
    if expected is None or actual is None:
        return actual is None and expected is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual == expected and isinstance(actual, bool) == isinstance(expected, bool)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return actual == pytest.approx(expected, rel=1e-9, abs=1e-12)
    return actual == expected


def assert_same_rows(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Assert equal rows regardless of order (see the module docstring for the tolerances)."""
    key = lambda r: json.dumps({k: _normal(v) for k, v in sorted(r.items())}, sort_keys=True, default=str)  # noqa: E731
    actual = sorted(({k: _normal(v) for k, v in r.items()} for r in actual), key=lambda r: (r.get("__source__") or "", key(r)))
    expected = sorted(expected, key=lambda r: (r.get("__source__") or "", key(r)))
    assert len(actual) == len(expected), f"{len(actual)} rows, expected {len(expected)}: {actual}"
    assert [sorted(r) for r in actual] == [sorted(r) for r in expected], f"column sets differ: {sorted(actual[0]) if actual else []}"
    bad = [(a, e) for a, e in zip(actual, expected) if not all(_same_value(a[k], e[k]) for k in e)]
    assert not bad, f"rows differ (actual, expected): {bad}"


def run_case(case: Case, engine: str, tmp_path: pathlib.Path):
    """Run one case on ``engine``; return (output rows, error records as (source, op, error_type), report)."""
    data = write_data(tmp_path / "in")
    sink = tmp_path / "out"
    doc = {
        "name": "conformance",
        "engine": engine,
        "source": _uri(data, case.source),
        "sources": {name: _uri(data, kind) for name, kind in case.sources.items()},
        "steps": case.steps,
        "sink": {"uri": str(sink), "format": "parquet"},
    }
    report = run_pipeline(parse_pipeline(doc), QUIET)
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()]
    errors = sorted((r["source"], r["op"], r["error_type"]) for p in (sink / "_errors").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines()))
    return data, rows, errors, report


class EngineContract:
    """Every table op: the same rows and the same row errors on each engine. Needs an ``engine`` fixture."""

    @pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
    def test_table_op_gives_the_expected_rows(self, engine: str, name: str, tmp_path: pathlib.Path):
        case = CASES[name]
        data, rows, errors, report = run_case(case, engine, tmp_path)
        assert report.engine == engine
        assert_same_rows(rows, case.expected(data))
        assert errors == sorted(case.errors(data))
        assert report.rows_errored == len(errors)

    @pytest.mark.parametrize(
        "sink, most_rows",
        [({"format": "parquet", "max_file_bytes": 7000}, 3), ({"format": "jsonl", "max_file_bytes": 7000}, 3), ({"format": "parquet", "rows_per_file": 2}, 2)],
        ids=["parquet-by-bytes", "jsonl-by-bytes", "by-rows"],
    )
    def test_sink_shards_files_by_rows_and_by_bytes(self, engine: str, sink: dict[str, Any], most_rows: int, tmp_path: pathlib.Path):
        # Each row carries ~2 kB: 7000 bytes hold 3 rows by the engines' in-memory size estimate.
        pq.write_table(pa.table({"id": list(range(10)), "blob": [f"{i:02d}" * 1000 for i in range(10)]}), tmp_path / "blobs.parquet")
        doc = {"name": "shards", "engine": engine, "source": {"uri": str(tmp_path / "blobs.parquet"), "format": "parquet"},
               "steps": [{"op": "table.select", "params": {"columns": ["id", "blob"]}}], "sink": {"uri": str(tmp_path / "out"), **sink}}
        run_pipeline(parse_pipeline(doc), QUIET)
        files = json.loads((tmp_path / "out" / "_manifest.json").read_text())["files"]
        assert sorted(f["rows"] for f in files)[-1] == most_rows and len(files) >= -(-10 // most_rows)
        assert sum(f["rows"] for f in files) == 10

    def test_user_columns_named_like_dataflows_working_columns_round_trip(self, engine: str, tmp_path: pathlib.Path):
        # Names dataflow once used for its own working columns (``__df_row``, ``__df_rows_in``, ...): user data may take them.
        rows = [{"__df_part": f"p{i % 3}", "__df_row": i, "__df_batch": f"b{i}", "__df_bad": i % 2 == 0, "__df_id": 100 - i} for i in range(12)]
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "w.parquet")
        steps = [{"op": "table.filter_rows", "params": {"where": "__df_row >= 2 AND __df_bad"}},
                 {"op": "table.with_columns", "params": {"columns": {"__df_rows": "__df_row * 10", "__df_state": "upper(__df_batch)"}}}]
        flat = run_pipeline(parse_pipeline({"name": "w", "engine": engine, "source": {"uri": str(tmp_path / "w.parquet"), "format": "parquet"},
                                            "steps": steps, "sink": {"uri": str(tmp_path / "flat"), "format": "parquet"}}), QUIET)
        kept = [r for r in rows if r["__df_row"] >= 2 and r["__df_bad"]]
        got = [r for p in (tmp_path / "flat").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        assert_same_rows([{k: v for k, v in r.items() if k != "__source__"} for r in got],
                         [{**r, "__df_rows": 10 * r["__df_row"], "__df_state": r["__df_batch"].upper()} for r in kept])
        aggregate = {"op": "table.aggregate", "params": {"keys": ["__df_part"], "aggregations": {
            "n": "count(*)", "__df_rows": "sum(__df_id)", "__df_rows_in": "sum(__df_row)", "__df_merged": "max(__df_id)", "__df_state": "min(__df_batch)"}}}
        grouped = run_pipeline(parse_pipeline({"name": "w", "engine": engine, "source": {"uri": str(tmp_path / "w.parquet"), "format": "parquet"},
                                               "steps": [steps[0], aggregate], "sink": {"uri": str(tmp_path / "grouped"), "format": "parquet"}}), QUIET)
        got = [r for p in (tmp_path / "grouped").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        parts = sorted({r["__df_part"] for r in kept})
        assert_same_rows([{k: v for k, v in r.items() if k != "__source__"} for r in got], [
            {"__df_part": p, "n": sum(r["__df_part"] == p for r in kept), "__df_rows": sum(r["__df_id"] for r in kept if r["__df_part"] == p),
             "__df_rows_in": sum(r["__df_row"] for r in kept if r["__df_part"] == p),
             "__df_merged": max(r["__df_id"] for r in kept if r["__df_part"] == p), "__df_state": min(r["__df_batch"] for r in kept if r["__df_part"] == p)}
            for p in parts])
        assert (flat.rows_in, flat.rows_out, grouped.rows_out) == (12, len(kept), len(parts))

    @pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
    def test_a_value_in_an_input_column_spelled_like_a_working_column_is_a_row_error_of_the_read(self, engine: str, tmp_path: pathlib.Path, fmt: str):
        # ``__df_<name>__`` is dataflow's working columns' namespace: such a column is left out, a row holding a value in it goes to _errors/.
        rows = [{"k": 1, "__df_row__": None, "__df_part": "a"}, {"k": 2, "__df_row__": 7, "__df_part": "b"}, {"k": 3, "__df_part": None},
                {"k": 4, "__df_row__": 9, "__df_part": "d"}]
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pylist(rows), tmp_path / "w.parquet")
        elif fmt == "jsonl":
            (tmp_path / "w.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:  # CSV fields are text: an empty one is a value too, so every row of a file with such a column is refused
            (tmp_path / "w.csv").write_text("k,__df_row__,__df_part\n1,,a\n2,7,b\n3,,\n4,9,d\n")
        doc = {"name": "w", "engine": engine, "source": {"uri": str(tmp_path / f"w.{fmt}"), "format": fmt},
               "steps": [{"op": "table.with_columns", "params": {"columns": {"m": "1"}}}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
        report = run_pipeline(parse_pipeline(doc), QUIET)
        tables = [pq.read_table(p) for p in (tmp_path / "out").glob("*.parquet")]
        assert all("__df_row__" not in t.column_names for t in tables)
        kept = sorted((r["k"], r["__df_part"]) for t in tables for r in t.to_pylist())
        assert kept == ([] if fmt == "csv" else [(1, "a"), (3, None)])
        errors = sorted((r["source"].rsplit("=", 1)[1], r["op"], r["error_type"], r["reason"])
                        for p in (tmp_path / "out" / "_errors").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines()))
        reason = "column '__df_row__' is in dataflow's reserved namespace __df_<name>__ (its working columns); rename it in the input"
        refused = {"parquet": ["1", "3"], "jsonl": ["2", "4"], "csv": ["2", "3", "4", "5"]}[fmt]  # #row=N counts from 0, #line=N from 1 (a CSV header is line 1)
        assert errors == [(n, "read", "ValueError", reason) for n in refused]
        read = next(s for s in report.steps if s.op == "read")
        assert (read.rows_in, read.rows_out, read.rows_errored) == (4, 4 - len(refused), len(refused))

    def test_filter_counts_rows_in_out_and_dropped(self, engine: str, tmp_path: pathlib.Path):
        _, _, _, report = run_case(CASES["filter_rows"], engine, tmp_path)
        step = next(s for s in report.steps if s.op == "table.filter_rows")
        assert (report.rows_in, step.rows_in, step.rows_out, sum(step.drops.values())) == (6, 6, 3, 3)

    def test_a_flat_map_that_yields_nothing_for_a_row_drops_it(self, engine: str, tmp_path: pathlib.Path):
        _, _, _, report = run_case(CASES["parse_regex_drop"], engine, tmp_path)
        step = next(s for s in report.steps if s.op == "table.parse_regex")
        assert (step.rows_in, step.rows_out, step.rows_errored, sum(step.drops.values())) == (4, 1, 0, 3)

    def test_a_flat_map_that_drops_some_rows_and_expands_others_counts_each_drop(self, engine: str, tmp_path: pathlib.Path):
        # On Spark the op runs in Python workers; its drops were counted net (in - out), so expansion hid them.
        counts = [0, 3, 0, 1, 2, 0, 4]
        pq.write_table(pa.table({"n": counts}), tmp_path / "n.parquet")
        doc = {"name": "flat", "engine": engine, "source": {"uri": str(tmp_path / "n.parquet"), "format": "parquet"},
               "steps": [{"op": "tests.opfixtures:repeat_rows"}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
        report = run_pipeline(parse_pipeline(doc), QUIET)
        rows = [r for p in (tmp_path / "out").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        assert sorted((r["n"], r["copy"]) for r in rows) == sorted((n, k) for n in counts for k in range(n))
        step = report.steps[-1]
        assert (step.rows_in, step.rows_out, step.rows_errored, step.drops) == (7, 10, 0, {"table.repeat_rows": 3}), report.steps

    def test_two_python_flat_maps_in_a_row_count_each_steps_rows(self, engine: str, tmp_path: pathlib.Path):
        # On Spark each runs in Python workers with its own hidden drop count (python_steps.DROPS).
        counts = [0, 3, 0, 1, 2, 0, 4]
        pq.write_table(pa.table({"n": counts}), tmp_path / "n.parquet")
        doc = {"name": "flat2", "engine": engine, "source": {"uri": str(tmp_path / "n.parquet"), "format": "parquet"},
               "steps": [{"op": "tests.opfixtures:repeat_rows"}, {"op": "tests.opfixtures:repeat_rows"}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
        report = run_pipeline(parse_pipeline(doc), QUIET)
        rows = [r for p in (tmp_path / "out").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        assert sorted((r["n"], r["copy"]) for r in rows) == sorted((n, k) for n in counts for _ in range(n) for k in range(n))
        first, second = [(s.rows_in, s.rows_out, s.rows_errored, dict(s.drops)) for s in report.steps if s.op != "read"]
        assert first == (7, 10, 0, {"table.repeat_rows": 3}) and second[:3] == (10, 30, 0) and sum(second[3].values()) == 0, report.steps
        assert not [line for p in (tmp_path / "out").glob("_errors/*.jsonl") for line in p.read_text().splitlines()]

    def test_a_flat_map_that_refuses_drops_and_expands_rows_of_one_batch_counts_each(self, engine: str, tmp_path: pathlib.Path):
        counts = [2, -1, 0, 3, -5, 0, 1]  # one file, one batch: 2 row errors, 2 drops, 3 rows expanded into 6
        pq.write_table(pa.table({"n": counts}), tmp_path / "n.parquet")
        doc = {"name": "mixed", "engine": engine, "source": {"uri": str(tmp_path / "n.parquet"), "format": "parquet"},
               "steps": [{"op": "tests.opfixtures:repeat_or_refuse"}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
        report = run_pipeline(parse_pipeline(doc), QUIET)
        rows = [r for p in (tmp_path / "out").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        assert sorted((r["n"], r["copy"]) for r in rows) == sorted((n, k) for n in counts if n > 0 for k in range(n))
        errors = sorted((r["source"].rsplit("=", 1)[1], r["op"], r["error_type"], r["reason"])
                        for p in (tmp_path / "out" / "_errors").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines()))
        assert errors == [("1", "table.repeat_or_refuse", "RowError", "n is negative: -1"), ("4", "table.repeat_or_refuse", "RowError", "n is negative: -5")]
        step = report.steps[-1]
        assert (step.rows_in, step.rows_out, step.rows_errored, dict(step.drops)) == (7, 6, 2, {"table.repeat_or_refuse": 2}), report.steps
        expanded = sum(1 for n in counts if n > 0)
        assert step.rows_in == expanded + sum(step.drops.values()) + step.rows_errored  # every input row: expanded, dropped or refused

    def test_the_same_filter_twice_counts_each_steps_drops(self, engine: str, tmp_path: pathlib.Path):
        _, _, _, report = run_case(CASES["filter_rows_twice"], engine, tmp_path)
        counts = [(s.op, s.rows_in, s.rows_out, sum(s.drops.values())) for s in report.steps]
        assert counts == [("read", 6, 6, 0), ("table.filter_rows", 6, 5, 1), ("table.filter_rows", 5, 3, 2)]

    def test_an_undecodable_line_is_the_reads_error_and_the_first_check_counts_the_rest(self, engine: str, tmp_path: pathlib.Path):
        # On Spark the read's UTF-8 check is folded into parse_json's: still counted and recorded apart.
        lines = [b'{"link": "a", "rx": -3.5}', b"{not json", b'{"link": "b\xff", "rx": 1}', b'{"link": "c", "rx": "high"}', b'{"link": "d", "rx": 2}']
        (tmp_path / "t.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        doc = {"name": "undecodable", "engine": engine, "source": {"uri": str(tmp_path / "t.jsonl"), "format": "text", "options": {"split": "line"}},
               "steps": [{"op": "table.parse_json", "params": {"fields": {"link": "string", "rx": "double"}}},
                         {"op": "table.filter_rows", "params": {"where": "rx < 0"}}],
               "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
        report = run_pipeline(parse_pipeline(doc), QUIET)
        rows = [r for p in (tmp_path / "out").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
        errors = sorted((r["source"].rsplit("=", 1)[1], r["op"], r["error_type"]) for p in (tmp_path / "out" / "_errors").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines()))
        assert [(r["link"], r["rx"]) for r in rows] == [("a", -3.5)]
        assert errors == [("2", "table.parse_json", "JSONDecodeError"), ("3", "read", "UnicodeDecodeError"), ("4", "table.parse_json", "TypeError")]
        steps = {s.op: (s.rows_in, s.rows_out, s.rows_errored) for s in report.steps}
        assert steps["read"] == (5, 4, 1) and steps["table.parse_json"] == (4, 2, 2) and steps["table.filter_rows"] == (2, 1, 0)
