"""The Python API without an engine: fluent steps, in-memory sources, YAML and Kubernetes refusals."""
from __future__ import annotations

import pandas as pd
import pytest

import dataflow
from dataflow.errors import PipelineSpecError, PlanError
from dataflow.ops import op


@op(name="demo.shout", modality="text", inputs=("text",), outputs=("text",))
def shout(batch, *, mark: str = "!"):
    """Upper-case the text.

    Args:
        mark: Appended to each text.
    """
    return {**batch, "text": [t.upper() + mark for t in batch["text"]]}


def _frame():
    return dataflow.from_pandas(pd.DataFrame({"n": [1, 2, 3], "text": ["a", "b", "c"]}), name="frame")


def test_fluent_methods_append_steps():
    p = _frame().filter("n > :floor", floor=1).select("n", "text").with_column("m", "n * 2").map_batches(lambda b: b, batch_format="pandas")
    steps = [s["op"] for s in p._data["steps"]]
    assert steps[:3] == ["table.filter_rows", "table.select", "table.with_columns"] and steps[3].startswith("udf.")
    assert p._data["steps"][0]["params"] == {"where": "n > :floor", "vars": {"floor": 1}}


def test_in_memory_source_is_held_not_staged_with_memory_lineage():
    import pyarrow as pa

    from dataflow import memory
    from dataflow.runtime import held

    staged = list(held._STAGING)
    n = pa.array([1, 2, 3])
    p = dataflow.from_arrow(pa.table({"n": n}), name="frame")
    source = p._data["source"]
    assert source["uri"].startswith("held://frame/") and source["format"] == "parquet" and source["options"] == {"memory": "frame", "keep_lineage": True}
    table = memory.held(source["uri"])
    assert table.column("__source__").to_pylist() == ["memory:frame#row=0", "memory:frame#row=1", "memory:frame#row=2"]
    assert table.column("n").chunks[0].buffers()[1].address == n.buffers()[1].address  # the user's buffer, not a copy
    items = memory.held(dataflow.from_items([{"a": 1}, {"a": 2}], name="rows")._data["source"]["uri"])
    assert items.to_pylist() == [{"a": 1, "__source__": "memory:rows#row=0"}, {"a": 2, "__source__": "memory:rows#row=1"}]
    assert held._STAGING == staged  # no staging folder
    memory.release(p)
    with pytest.raises(dataflow.errors.RunError, match="held by the process that made them"):
        memory.held(source["uri"])


def test_explain_marks_an_in_memory_source_not_resumable():
    text = _frame().apply(shout).explain()
    assert "Read[memory] name=frame" in text and "not resumable" in text and "Map[demo.shout]" in text


def test_to_yaml_refuses_a_plain_function_an_op_from_main_and_an_in_memory_source(tmp_path):
    read = dataflow.read(str(tmp_path), format="text")
    with pytest.raises(PipelineSpecError, match=r"steps\[0\]\.op: 'udf\.lambda\w*' is a plain function given to map_batches"):
        read.map_batches(lambda b: b).write(str(tmp_path / "o")).to_yaml()
    with pytest.raises(PipelineSpecError, match="in-memory source"):
        _frame().write(str(tmp_path / "o")).to_yaml()


def test_to_yaml_writes_a_module_op_as_its_reference(tmp_path):
    text = dataflow.read(str(tmp_path), format="text").apply(shout, mark="?").write(str(tmp_path / "o")).to_yaml()
    assert "op: tests.unit.api.test_pipeline_api:shout" in text
    assert dataflow.Pipeline.from_yaml_text(text).spec.steps[0].params == {"mark": "?"}


def test_to_yaml_refuses_an_op_declared_in_main(tmp_path, monkeypatch):
    monkeypatch.setattr(shout.target, "__module__", "__main__")
    with pytest.raises(PipelineSpecError, match="declared in __main__ .*move it into a module"):
        dataflow.read(str(tmp_path), format="text").apply(shout).write(str(tmp_path / "o")).to_yaml()


def test_kubernetes_render_refuses_an_in_memory_source(tmp_path):
    from dataflow.engines.registry import engine_caps
    from dataflow.k8s.config import load_cluster_config
    from dataflow.k8s.render import render_plan
    from dataflow.plan.planner import plan_pipeline

    spec = _frame().filter("n > 1").write(str(tmp_path / "o")).spec
    _, plan = plan_pipeline(spec, engine_caps())
    with pytest.raises(PlanError, match="'frame' is an in-memory source .* a cluster cannot read it"):
        render_plan(plan, "", load_cluster_config(None))
