"""The @op decorator's import-time checks, the callable OpSpec and module:function references."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.errors import OpDefinitionError, UnknownOpError
from dataflow.ops import Needs, Resources, get_op, op


def _declare(name="text.upper_case", **kw):
    def upper(batch: dict, *, column: str = "text") -> dict:
        """Upper-case a column.

        Args:
            column: Column to change.
        """
        batch[column] = np.array([t.upper() for t in batch[column]], dtype=object)
        return batch

    defaults = dict(name=name, modality=name.split(".")[0], inputs=("{column}",), outputs=("{column}",))
    defaults.update(kw)
    return op(**defaults)(upper)


def test_declared_op_is_callable_on_a_plain_batch_and_registered():
    spec = _declare("text.upper_case_test")
    out = spec({"text": np.array(["ab", "c"], dtype=object)})
    assert list(out["text"]) == ["AB", "C"]
    assert get_op("text.upper_case_test") is spec
    assert spec.columns(spec.params(column="caption")) == (("caption",), ("caption",))
    assert spec.param_docs == {"column": "Column to change."}


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"name": "Text.Bad"}, "name must match"),
        ({"name": "image.upper_x", "modality": "text"}, "must equal the name's namespace"),
        ({"outputs": ()}, "outputs must not be empty"),
        ({"inputs": ("BadCol",)}, "snake_case"),
        ({"inputs": ("{nope}",)}, "names no parameter"),
        ({"reshapes": True}, "only a global op may reshape"),
        ({"partition_by": "column"}, "only a global op declares how it shuffles"),
        ({"kind": "global", "partition_by": "keys"}, "partition_by names no parameter 'keys'"),
    ],
    ids=["bad-name", "modality-mismatch", "no-outputs", "column-case", "template", "reshaping-map", "partitioned-map", "partition-param"],
)
def test_definition_errors_name_the_rule(kw, match):
    kw.setdefault("name", "text.rule_check")
    with pytest.raises(OpDefinitionError, match=match):
        _declare(**kw)


def test_undocumented_and_positional_params_are_refused():
    def no_doc(batch, *, size: int = 1):
        """Do something.

        Args:
            other: Not the param.
        """

    def positional(batch, size: int = 1):
        """Do something.

        Args:
            size: Size.
        """

    with pytest.raises(OpDefinitionError, match="'size' is not documented"):
        op(name="text.no_doc", modality="text", inputs=(), outputs=("x",))(no_doc)
    with pytest.raises(OpDefinitionError, match="must be keyword-only"):
        op(name="text.positional", modality="text", inputs=(), outputs=("x",))(positional)


def test_duplicate_name_is_refused():
    _declare("text.declared_twice")
    with pytest.raises(OpDefinitionError, match="already registered"):
        _declare("text.declared_twice")


def test_resources_are_checked():
    with pytest.raises(OpDefinitionError, match=">= 0"):
        Resources(num_cpus=-1)
    with pytest.raises(OpDefinitionError, match="whole number"):
        Resources(num_gpus=1.5)
    assert Resources(num_cpus=1).merged(Resources(batch_size=8)).as_dict() == {"num_cpus": 1, "batch_size": 8}


def test_gpu_variant_needs_gpus_and_same_signature():
    spec = _declare("text.upper_gpu_check")
    with pytest.raises(OpDefinitionError, match="num_gpus > 0"):
        spec.gpu(resources=Resources(num_gpus=0))
    with pytest.raises(OpDefinitionError, match="signature"):
        spec.gpu()(lambda batch: batch)


def test_stateful_class_op_is_instantiated_once_per_bind():
    class Counter:
        """Count calls.

        Args:
            start: First value.
        """

        def __init__(self, *, start: int = 0):
            self.n = start

        def __call__(self, batch):
            self.n += 1
            batch["n"] = np.full(len(batch["text"]), self.n)
            return batch

    spec = op(name="text.count_calls", modality="text", inputs=("text",), outputs=("n",))(Counter)
    fn = spec.bind(spec.params(start=10))
    fn({"text": np.array(["a"], dtype=object)})
    assert int(fn({"text": np.array(["a"], dtype=object)})["n"][0]) == 12
    assert spec.stateful


def test_module_function_reference_resolves_an_op():
    assert get_op("dataflow.ops.image.resize:resize_image").name == "image.resize"
    with pytest.raises(UnknownOpError, match="not an @op-declared operator"):
        get_op("dataflow.ops.image.resize:fit_within")
    with pytest.raises(UnknownOpError) as info:
        get_op("image.resise")
    assert info.value.suggestions[0] == "image.resize"


def test_needs_must_name_a_param_and_adds_modules_for_its_value():
    with pytest.raises(OpDefinitionError, match="needs names no parameter 'mode'"):

        @op(name="text.needs_bad", modality="text", inputs=("text",), outputs=("text",), needs=(Needs("mode", "fast", ("fastlib",)),))
        def _bad(batch: dict, *, method: str = "slow") -> dict:
            """Bad.

            Args:
                method: How.
            """
            return batch

    @op(name="text.needs_some", modality="text", inputs=("text",), outputs=("text",), needs=(Needs("method", "fast", ("dataflow_absent_fastlib",), "fast"),))
    def _some(batch: dict, *, method: str = "slow") -> dict:
        """Some.

        Args:
            method: How.
        """
        return batch

    assert _some.missing() == ([], "")
    assert _some.missing({"method": "fast"}) == (["dataflow_absent_fastlib"], "pip install 'dataflow[fast]'")


def test_only_aggregations_and_joins_reshape_the_other_global_ops_drop_rows():
    from dataflow.ops.declare import OpKind
    from dataflow.ops.registry import all_ops

    global_ops = [s for s in all_ops() if s.kind is OpKind.GLOBAL]
    assert {s.name for s in global_ops if s.reshapes} == {"table.aggregate", "table.join", "table.window_aggregate"}
    assert all(s.drops_rows for s in global_ops if not s.reshapes)
