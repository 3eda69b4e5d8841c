"""Invariants on both engines, over inputs hypothesis draws (a fixed, derandomized profile).

- A pass-through is the identity: the multiset of rows out equals the rows in, whatever the
  schema (user columns named like dataflow's own, nulls, nested structs and lists, Unicode keys,
  empty files), and each row's ``__source__`` is its input position.
- Every dedup equals a plain-Python reference on the same rows: in each duplicate group the row
  with the smallest ``__source__`` is kept, whatever the shard count and ``batch_size``. MinHash's
  reference is the op itself called once on all rows in this process (its distributed lowering
  must not change what it keeps).

Profile ``dataflow-ci``: ``EXAMPLES`` (12) examples per property and engine; no deadline, no
shrinking, derandomized, no example database, so CI runs the same examples every time.
"""
from __future__ import annotations

import json
import pathlib
import tempfile
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from dataflow.columns import SOURCE
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

EXAMPLES = 12
settings.register_profile(
    "dataflow-ci", max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as drawn, in bounded time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
CI = settings.get_profile("dataflow-ci")
QUIET = RunOptions(progress=False)

# Names users give their columns, dataflow's old names among them, and non-ASCII ones.
NAMES = ["source", "id", "text", "bytes", "image", "path", "key", "meta", "名前", "ключ", "größe", "emoji_🙂"]
_STR = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_SCALARS = {
    "int": st.integers(-(2**53), 2**53),
    "float": st.floats(allow_nan=False, allow_infinity=False, width=64),
    "str": _STR,
    "bool": st.booleans(),
}


@st.composite
def _column_type(draw, depth: int = 0) -> st.SearchStrategy:
    kinds = ["int", "float", "str", "bool"] + (["list", "struct"] if depth == 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "list":
        return st.lists(_SCALARS[draw(st.sampled_from(["int", "str"]))], max_size=3)
    if kind == "struct":
        fields = draw(st.lists(st.sampled_from(["lang", "url", "score", "名"]), min_size=1, max_size=3, unique=True))
        inner = {f: draw(_column_type(depth=1)) for f in fields}
        return st.fixed_dictionaries({f: st.none() | s for f, s in inner.items()})
    return _SCALARS[kind]


@st.composite
def tables(draw) -> tuple[list[str], list[list[dict[str, Any]]]]:
    """Column names and, per file, its rows (some files empty); every column holds one type or null."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    values = {n: draw(_column_type()) for n in names}
    row = st.fixed_dictionaries({n: st.none() | s for n, s in values.items()})
    files = draw(st.lists(st.lists(row, max_size=6), min_size=1, max_size=4))
    # Spark infers a JSON column's type from its values: a column null everywhere has none to infer.
    for n in names:
        if all(r[n] is None for f in files for r in f) and any(files):
            next(f for f in files if f)[0][n] = draw(values[n])
    return names, files


def _write(root: pathlib.Path, files: list[list[dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Write each file as JSONL; returns (expected lineage, row) for every row."""
    root.mkdir(parents=True)
    out = []
    for i, rows in enumerate(files):
        path = root / f"part-{i}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        out += [(f"{path}#line={n}", r) for n, r in enumerate(rows, start=1)]
    return out


def _run(engine: str, root: pathlib.Path, steps: list[dict[str, Any]], **source_options: Any) -> list[dict[str, Any]]:
    sink = root.parent / "out"
    doc = {"name": "props", "engine": engine, "source": {"uri": str(root), "format": "jsonl", "options": source_options},
           "steps": steps, "sink": {"uri": str(sink), "format": "parquet"}}
    report = run_pipeline(parse_pipeline(doc), QUIET)
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()]
    assert report.rows_out == len(rows)
    return rows


def _canonical(row: dict[str, Any]) -> str:
    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: norm(x) for k, x in sorted(v.items())}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(row), sort_keys=True, ensure_ascii=False)


@pytest.fixture(params=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue(f"{request.param}_local")
    return request.param


@CI
@given(data=tables())
@example(data=(["source"], [[]]))  # one empty file: no field to read (Spark's JSON reader refuses a query of its corrupt column alone)
def test_a_pass_through_is_the_identity(engine: str, data):
    names, files = data
    with tempfile.TemporaryDirectory() as tmp:
        written = _write(pathlib.Path(tmp) / "in", files)
        rows = _run(engine, pathlib.Path(tmp) / "in", [])
    assert sorted(r[SOURCE] for r in rows) == sorted(src for src, _ in written)
    by_source = dict(written)
    for r in rows:
        user = {k: v for k, v in r.items() if k != SOURCE}
        assert set(user) == set(names), f"columns {sorted(user)}, expected {sorted(names)}"
        assert _canonical(user) == _canonical(by_source[r[SOURCE]])


def _keep_smallest(written: list[tuple[str, dict[str, Any]]], key) -> set[str]:
    """Reference dedup: per ``key(row)`` group, the lineage of the row with the smallest lineage."""
    best: dict[Any, str] = {}
    for src, row in written:
        k = key(row)
        if k not in best or src < best[k]:
            best[k] = src
    return set(best.values())


_DOC = st.fixed_dictionaries({
    "text": st.sampled_from(["same words", "same  words", "Same words", "数据 训练", "", "unique 🙂", "other"]),
    "source": st.sampled_from(["common-crawl", "c4", None]),
    "id": st.integers(0, 5),
})


@CI
@given(files=st.lists(st.lists(_DOC, max_size=8), min_size=1, max_size=4), files_per_shard=st.sampled_from([1, 2, 64]),
       batch_size=st.sampled_from([1, 3, 1000]))
def test_dedup_exact_keeps_the_smallest_identity_of_each_group(ray_local, files, files_per_shard: int, batch_size: int):
    engine = "ray"  # text.dedup_exact runs on Ray only
    with tempfile.TemporaryDirectory() as tmp:
        written = _write(pathlib.Path(tmp) / "in", files)
        rows = _run(engine, pathlib.Path(tmp) / "in", [{"op": "text.dedup_exact", "resources": {"batch_size": batch_size}}],
                    files_per_shard=files_per_shard)
    expected = _keep_smallest(written, lambda r: " ".join(r["text"].split()))
    assert {r[SOURCE] for r in rows} == expected
    assert len(rows) == len(expected)
    by_source = dict(written)
    assert all({k: v for k, v in r.items() if k != SOURCE} == by_source[r[SOURCE]] for r in rows)  # user values untouched


@CI
@given(files=st.lists(st.lists(_DOC, max_size=8), min_size=1, max_size=3), keep=st.sampled_from(["first", "last"]),
       files_per_shard=st.sampled_from([1, 64]))
def test_table_dedup_keeps_the_first_or_last_then_the_smallest_identity(engine: str, files, keep: str, files_per_shard: int):
    with tempfile.TemporaryDirectory() as tmp:
        written = _write(pathlib.Path(tmp) / "in", files)
        rows = _run(engine, pathlib.Path(tmp) / "in", [{"op": "table.dedup", "params": {"keys": ["source"], "order_by": "id", "keep": keep}}],
                    files_per_shard=files_per_shard)
    best: dict[Any, tuple] = {}
    for src, row in written:
        rank = (-row["id"] if keep == "last" else row["id"], src)
        if row["source"] not in best or rank < best[row["source"]]:
            best[row["source"]] = rank
    assert sorted(r[SOURCE] for r in rows) == sorted(src for _, src in best.values())



_NEAR = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "数据", "🙂"]), min_size=6, max_size=12).map(" ".join)


@CI
@given(texts=st.lists(st.lists(_NEAR, max_size=6), min_size=1, max_size=3), files_per_shard=st.sampled_from([1, 64]),
       batch_size=st.sampled_from([2, 1000]))
def test_dedup_minhash_on_ray_equals_the_op_on_all_rows_at_once(ray_local, texts, files_per_shard: int, batch_size: int):
    import numpy as np

    from dataflow.ops.registry import get_op

    params = {"ngram": 2, "num_perm": 32, "threshold": 0.5, "device": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        written = _write(pathlib.Path(tmp) / "in", [[{"text": t, "source": "cc"} for t in f] for f in texts])
        rows = _run("ray", pathlib.Path(tmp) / "in", [{"op": "text.dedup_minhash", "params": params, "resources": {"batch_size": batch_size}}],
                    files_per_shard=files_per_shard)
    batch = {SOURCE: np.array([s for s, _ in written], dtype=object), "text": np.array([r["text"] for _, r in written], dtype=object)}
    expected = get_op("text.dedup_minhash")(batch, **params)[SOURCE] if written else []
    assert sorted(r[SOURCE] for r in rows) == sorted(expected)
