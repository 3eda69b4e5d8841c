"""text.dedup_semantic past the exact range: default clusters (sqrt(rows)) and a sampled fit, the same rows on Ray, Spark and in process."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.ops.kmeans import EXACT_UP_TO
from dataflow.ops.text.dedup_semantic import dedup_text_semantic
from dataflow.runner import run_pipeline
from tests.contracts.engine import QUIET, semantic_reference, semantic_vectors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """About 11,500 embeddings (past the exact range) in 4 files; the rows in-process k-means keeps."""
    vectors = semantic_vectors(seed=3, d=16, topics=12, per=700)
    root = tmp_path_factory.mktemp("semantic")
    parts = np.array_split(np.arange(len(vectors)), 4)
    sources = []
    for f, rows in enumerate(parts):
        path = root / f"part-{f}.parquet"
        pq.write_table(pa.table({"doc": rows, "embedding": pa.array(list(vectors[rows]), pa.list_(pa.float32()))}), path, row_group_size=2048)
        sources += [f"{path}#row={i}" for i in range(len(rows))]
    batch = {"__source__": np.array(sources, dtype=object), "doc": np.arange(len(vectors)), "embedding": vectors}
    kept = sorted(int(d) for d in dedup_text_semantic(batch, threshold=0.95, seed=1)["doc"])
    return root, vectors, sources, kept


@pytest.mark.parametrize("engine", ["ray", "spark"], ids=["ray", "spark"])
def test_default_clusters_keep_the_in_process_rows_on_each_engine(engine, corpus, request, tmp_path):
    request.getfixturevalue("ray_local" if engine == "ray" else "spark_local")
    root, vectors, sources, kept = corpus
    assert len(vectors) > EXACT_UP_TO
    doc = {"name": "semantic", "engine": engine, "source": {"uri": str(root), "format": "parquet"},
           "steps": [{"op": "text.dedup_semantic", "params": {"threshold": 0.95, "seed": 1}}, {"op": "table.select", "params": {"columns": ["doc"]}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report = run_pipeline(parse_pipeline(doc), QUIET)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    out = sorted(r["doc"] for f in manifest["files"] for r in pq.read_table(tmp_path / "out" / f["path"]).to_pylist())
    assert out == kept
    step = next(s for s in report.steps if s.op == "text.dedup_semantic")
    assert (step.rows_in, step.rows_out, sum(step.drops.values())) == (len(vectors), len(kept), len(vectors) - len(kept))
    # Never drops a row exact all-pairs keeps; misses at most a few pairs split by a cluster boundary.
    exact = semantic_reference(vectors, sources, 0.95)
    assert set(exact) <= set(out) and len(out) - len(exact) <= 0.02 * len(exact)
