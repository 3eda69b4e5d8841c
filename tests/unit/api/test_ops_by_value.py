"""Ops travel to workers by value: import references for module ops, cloudpickled callables otherwise."""
from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import json

import cloudpickle
import numpy as np
import pytest

from dataflow.ops import get_op
from dataflow.ops.function import function_op
from dataflow.ops.shipping import reference
from dataflow.runtime.stage import StageExecutor, StepCall

_IN_A_FRESH_PROCESS = textwrap.dedent("""
    import json, pickle, sys
    import numpy as np
    from dataflow.ops import registry
    from dataflow.runtime.stage import StageExecutor
    calls = pickle.loads(sys.stdin.buffer.read())
    out, errors, stats = StageExecutor(calls)({"__source__": np.array(["a", "b", "c"], dtype=object), "x": np.arange(3)})
    print(json.dumps([[c.op.name for c in calls], out["z"].tolist(), sorted(registry._REGISTRY)]))
""")


def test_a_builtin_op_travels_as_its_import_reference_with_its_validated_params():
    call = StepCall(0, "image.resize", {"max_side": 9})
    assert reference(call.op) == "dataflow.ops.image.resize:resize_image"
    back = pickle.loads(pickle.dumps(call))
    assert back.op is get_op("image.resize") and back.params == call.params and back.params.max_side == 9


def test_params_with_a_field_called_keys_travel():
    call = StepCall(0, "table.dedup", {"keys": ["k"]})
    assert pickle.loads(pickle.dumps(call)).params.keys == ["k"]


def test_params_are_not_validated_again_on_the_worker(monkeypatch):
    call = StepCall(0, "image.resize", {"max_side": 9})
    blob = pickle.dumps(call)
    monkeypatch.setattr(type(call.params), "model_validate", None)  # a validation on load would fail
    assert pickle.loads(blob).params.max_side == 9


def test_an_op_from_main_and_a_callable_class_run_in_a_process_that_never_declared_them(tmp_path):
    script = tmp_path / "declare.py"
    script.write_text(textwrap.dedent('''
        import sys, cloudpickle
        from dataflow.ops import op
        from dataflow.ops.function import function_op
        from dataflow.runtime.stage import StepCall

        @op(name="demo.times", modality="table", inputs=("x",), outputs=("y",))
        def times(batch, *, k: int = 2):
            """Multiply x.

            Args:
                k: The factor.
            """
            return {**batch, "y": batch["x"] * k}

        class Plus:
            def __init__(self, *, add):
                self.add = add  # built once per worker
            def __call__(self, batch):
                return {**batch, "z": batch["y"] + self.add}

        sys.stdout.buffer.write(cloudpickle.dumps([StepCall(0, times, times.params(k=3)), StepCall(1, function_op(Plus, fn_constructor_kwargs={"add": 10}), {})]))
    '''))
    blob = subprocess.run([sys.executable, str(script)], capture_output=True, check=True).stdout
    run = subprocess.run([sys.executable, "-c", _IN_A_FRESH_PROCESS], input=blob, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    names, z, registered = json.loads(run.stdout)
    assert names == ["demo.times", "udf.plus"] and z == [10, 13, 16]
    assert "demo.times" not in registered  # rebuilt from its value, not looked up or registered


def test_function_ops_get_free_local_names_and_are_not_listed():
    from dataflow.ops.registry import all_ops, is_local

    def add_one(batch):
        return batch

    first, second = function_op(add_one), function_op(add_one)
    assert (first.name, second.name) == ("udf.add_one", "udf.add_one_2") and is_local(first.name)
    assert first.name not in {s.name for s in all_ops()}
    assert cloudpickle.loads(cloudpickle.dumps(StepCall(0, first, {}))).op.target(np.arange(2)).tolist() == [0, 1]


def test_map_batches_rejects_an_unknown_batch_format():
    from dataflow.errors import OpDefinitionError

    with pytest.raises(OpDefinitionError, match="batch_format must be one of"):
        function_op(lambda b: b, batch_format="polars")


def test_stage_executor_runs_a_callable_class_built_once():
    built = []

    class Tag:
        def __init__(self, *, label):
            built.append(label)
            self.label = label

        def __call__(self, batch):
            return {**batch, "tag": np.array([self.label] * len(batch["x"]), dtype=object)}

    ex = StageExecutor([StepCall(0, function_op(Tag, fn_constructor_kwargs={"label": "t"}), {})])
    for _ in range(3):
        out, _, _ = ex({"x": np.arange(2)})
    assert built == ["t"] and out["tag"].tolist() == ["t", "t"]
