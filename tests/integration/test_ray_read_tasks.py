"""A Ray Dataset of one shard reads its files ``FILES_PER_TASK`` a task, whatever batch the stages after the read ask for.

Ray Data fuses the read with the task stages after it and bundles the fused chain's input by its
largest batch size: a table stage's default of 16,384 rows would be as many files (Parquet row
groups) a read task, every file of the shard read one after another in one task. The read
operator's task count is Ray Data's own (``Dataset.stats()``).
"""
from __future__ import annotations

import json
import math
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.registry import compile_pipeline
from dataflow.plan.phases import split_at_global
from dataflow.runtime.stats import SideOutputs

FILES = 48  # three read tasks of 16
TYPED = {"level": "string", "lat": "double", "msg": "string"}
FILTER = {"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}}
AGGREGATE = {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)"}}}


@pytest.mark.parametrize(("fmt", "options", "steps"), [
    ("jsonl", {"schema": TYPED}, [FILTER]),
    ("jsonl", {}, [FILTER]),
    ("jsonl", {}, [FILTER, AGGREGATE]),  # a sharded run's map phase: the stage and the aggregation's partial states, one query per batch
    ("csv", {}, [FILTER]),
    ("parquet", {}, [FILTER]),  # a row group a read task
    ("jsonl", {}, [{**FILTER, "resources": {"batch_size": 24}}]),  # rows a call, not files a task (2 tasks of 24 before)
], ids=["typed-jsonl", "jsonl", "jsonl-into-partial-states", "csv", "parquet", "jsonl-batch-given"])
def test_the_stages_after_the_read_leave_it_its_tasks(ray_local, tmp_path, fmt, options, steps):
    from dataflow.engines.ray.read import FILES_PER_TASK
    from dataflow.engines.ray.run import build_dataset

    data = tmp_path / "in"
    data.mkdir()
    files = []
    for k in range(FILES):
        rows = [{"level": ["INFO", "DEBUG"][i % 2], "lat": i / 2, "msg": f"m{k}"} for i in range(20)]
        path = data / f"part-{k:03d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            path.write_text("level,lat,msg\n" + "".join(f"{r['level']},{r['lat']},{r['msg']}\n" for r in rows) if fmt == "csv" else "".join(json.dumps(r) + "\n" for r in rows))
        files.append(str(path))
    doc = {"name": "t", "engine": "ray", "source": {"uri": str(data), "format": fmt, "options": options},
           "steps": steps, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    _, optimized, engine, job = compile_pipeline(parse_pipeline(doc))
    if AGGREGATE in steps:
        job = engine.compile(split_at_global(optimized, str(tmp_path / "checkpoint"))[0])
    side = SideOutputs(uri=str(tmp_path), storage_options={}, stats_dir=str(tmp_path / "stats"), errors_dir=str(tmp_path / "errors"))
    ds = build_dataset(job, side, {}, inputs=files).materialize()
    assert ds.count(), "the run gave no rows"
    tasks = re.search(r"MapBatches\(Read(Stream|Adapter)\)\S*: (\d+) tasks executed", ds.stats())
    assert tasks is not None, ds.stats()
    assert int(tasks.group(2)) == (FILES if fmt == "parquet" else math.ceil(FILES / FILES_PER_TASK))


def test_a_media_stage_after_parquet_row_groups_leaves_the_read_a_row_group_a_task(ray_local, tmp_path):
    # Images stored in Parquet (a Hugging Face Image column): the media stage's batch of 64 would be 64 row groups a task.
    from dataflow.engines.ray.run import build_dataset
    from tests.datagen import encode, gradient

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    path = tmp_path / "train-00000-of-00001.parquet"
    jpeg = encode(gradient(16, 12), "JPEG")
    pq.write_table(pa.table({"image": pa.array([{"bytes": jpeg, "path": f"{i}.jpg"} for i in range(90)], image), "label": list(range(90))}),
                   path, row_group_size=15)
    doc = {"name": "t", "engine": "ray", "source": {"uri": str(path), "format": "parquet"},
           "steps": [{"op": "image.decode", "params": {"column": "image"}}, {"op": "table.select", "params": {"columns": ["label", "width"]}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    job = compile_pipeline(parse_pipeline(doc))[3]
    side = SideOutputs(uri=str(tmp_path), storage_options={}, stats_dir=str(tmp_path / "stats"), errors_dir=str(tmp_path / "errors"))
    ds = build_dataset(job, side, {}, inputs=[str(path)]).materialize()
    assert sorted(r["label"] for r in ds.take_all()) == list(range(90))
    tasks = re.search(r"MapBatches\(ReadAdapter\)\S*: (\d+) tasks executed", ds.stats())
    assert tasks is not None and int(tasks.group(1)) == 6, ds.stats()  # one each for the 6 row groups; 1 before
