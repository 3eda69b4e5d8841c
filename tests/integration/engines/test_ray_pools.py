"""Actor pools on the real 2-CPU Ray of the test run: fractional CPUs, sized from the CPUs Ray reports."""
from __future__ import annotations

import json
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.engines.ray.compile import ACTOR_NUM_CPUS, compile_plan
from dataflow.engines.ray.run import _stage_kwargs
from dataflow.runner import run_pipeline
from dataflow.engines.registry import engine_caps
from dataflow.plan.planner import plan_pipeline
from tests.datagen import write_images


def _doc(source: str, sink: str) -> dict:
    # image.embed is stateful (a model per worker): its stage runs as an actor pool.
    return {"name": "pool", "source": {"uri": source, "format": "image"}, "steps": [{"op": "image.decode"}, {"op": "image.embed"}],
            "sink": {"uri": sink}}


def _stage(**resources):
    _, optimized = plan_pipeline(parse_pipeline(_doc("/d", "/o")), engine_caps())
    (stage,) = compile_plan(optimized).stages
    return replace(stage, **resources)


def test_a_stateful_stage_is_an_actor_pool_with_fractional_cpus():
    stage = _stage()
    assert (stage.compute, stage.num_cpus, stage.concurrency) == ("actors", ACTOR_NUM_CPUS, None)


@pytest.mark.parametrize(
    "resources, concurrency",
    [({}, (1, 2)), ({"num_cpus": 1.0}, (1, 1)), ({"num_cpus": 0.25}, (1, 4)), ({"concurrency": 3}, 3)],
    ids=["half-cpu-actors", "whole-cpu-actors", "quarter-cpu-actors", "explicit"],
)
def test_pool_size_comes_from_the_cpus_ray_reports(ray_local, resources, concurrency):
    assert ray_local.cluster_resources()["CPU"] == 2
    kwargs = _stage_kwargs(_stage(**resources))
    # At most half the reported CPUs go to actors, so read tasks always find a CPU on 2 cores.
    assert kwargs["concurrency"] == concurrency
    assert kwargs["num_cpus"] == resources.get("num_cpus", ACTOR_NUM_CPUS)


def test_an_actor_pool_pipeline_finishes_on_two_cpus(ray_local, tmp_path):
    write_images(tmp_path / "images", 6, size=(64, 48))
    sink = tmp_path / "out"
    report = run_pipeline(parse_pipeline(_doc(str(tmp_path / "images"), str(sink))), RunOptions(progress=False))
    assert (report.rows_in, report.rows_out, report.rows_errored) == (6, 6, 0)
    files = json.loads((sink / "_manifest.json").read_text())["files"]
    rows = [r for f in files for r in pq.read_table(sink / f["path"]).to_pylist()]
    assert len(rows) == 6 and all(len(r["embedding"]) > 0 for r in rows)
