"""The Pipeline facade: an immutable, fluent builder over PipelineSpec.

Examples:
    >>> import dataflow
    >>> p = (dataflow.read("./images", format="image", name="thumbs")
    ...      .apply("image.decode").apply("image.resize", max_side=256)
    ...      .write("./out/thumbs", format="parquet"))
    >>> [s.op for s in p.spec.steps]
    ['image.decode', 'image.resize']
    >>> dataflow.Pipeline.from_yaml_text(p.to_yaml()).spec == p.spec
    True
"""
from __future__ import annotations

from typing import Any

from dataflow.dsl.parse import load_pipeline, parse_pipeline
from dataflow.dsl.spec import PipelineSpec
from dataflow.dsl.yaml_io import dump, load
from dataflow.errors import PipelineSpecError, SpecIssue
from dataflow.fluent import DatasetMethods

__all__ = ["Pipeline", "read"]


class Pipeline(DatasetMethods):
    """A pipeline under construction or loaded from YAML; every method returns a new Pipeline.

    The dataset methods (``map_batches``, ``filter``, ``to_pandas``, ``show``...) come from
    ``dataflow.fluent``.
    """

    def __init__(self, data: dict[str, Any]):
        self._data = data

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str, overrides: tuple[str, ...] = ()) -> Pipeline:
        """Load and validate a pipeline YAML file (``--set``-style ``overrides`` applied)."""
        return cls(_spec_data(load_pipeline(path, overrides=overrides)))

    @classmethod
    def from_yaml_text(cls, text: str) -> Pipeline:
        """Load and validate pipeline YAML given as text."""
        data, lines = load(text)
        return cls(_spec_data(parse_pipeline(data, lines=lines)))

    @classmethod
    def from_spec(cls, spec: PipelineSpec) -> Pipeline:
        return cls(_spec_data(spec))

    def _with(self, **changes: Any) -> Pipeline:
        return Pipeline({**self._data, **changes})

    def apply(self, op: Any, *, resources: dict[str, Any] | None = None, **params: Any) -> Pipeline:
        """Append a step: the op (its registry name, ``module:function``, or the ``@op`` itself) and its params."""
        step: dict[str, Any] = {"op": op if isinstance(op, str) else op.name}
        if params:
            step["params"] = params
        if resources:
            step["resources"] = resources
        return self._with(steps=[*self._data.get("steps", []), step])

    def write(self, uri: str, *, format: str = "parquet", mode: str = "error", **options: Any) -> Pipeline:
        """Set the sink; ``rows_per_file``, ``max_file_bytes``, ``lineage`` and ``keep`` are sink keys, others format options."""
        sink: dict[str, Any] = {"uri": uri, "format": format, "mode": mode}
        for key in ("rows_per_file", "max_file_bytes", "lineage", "keep"):
            if key in options:
                sink[key] = options.pop(key)
        if options:
            sink["options"] = options
        return self._with(sink=sink)

    def with_engine(self, engine: str) -> Pipeline:
        """Force an engine: ray, spark or auto."""
        return self._with(engine=engine)

    def with_errors(self, *, max_error_ratio: float | None = None, max_errors: int | None = None) -> Pipeline:
        """Set the error budget."""
        budget = {k: v for k, v in (("max_error_ratio", max_error_ratio), ("max_errors", max_errors)) if v is not None}
        return self._with(errors=budget)

    def with_storage(self, **options: dict[str, Any]) -> Pipeline:
        """Set filesystem options per scheme, e.g. ``s3={"endpoint_url": ...}``."""
        return self._with(storage={"options": options})

    # -- inspection ---------------------------------------------------------------------------
    @property
    def spec(self) -> PipelineSpec:
        """The validated spec (raises PipelineSpecError listing every problem)."""
        return parse_pipeline(self._data)

    def to_yaml(self) -> str:
        """The pipeline as YAML, loadable by ``dataflow run``.

        An op declared in a module that is neither built in nor a plugin is written as its
        ``module:function`` reference, so a fresh process can import it.

        Raises:
            PipelineSpecError: a step holds a function a fresh process cannot import (a plain
                function given to ``map_batches``, an ``@op`` declared in ``__main__`` or a notebook
                cell), or the source is in memory.
        """
        from dataflow.dsl.yaml_io import format_path
        from dataflow.ops.registry import yaml_name

        spec = self.spec
        issues = [SpecIssue(key="source", message="an in-memory source (from_pandas, from_ray, ...) cannot be written as YAML; write it to files first")] if spec.source.in_memory else []
        data = _spec_data(spec)
        for path, step in spec.indexed_steps():
            name, problem = yaml_name(step.op)
            if problem:
                issues.append(SpecIssue(key=format_path((*path, "op")), message=problem))
            elif name != step.op:
                _rename_op(data, path, name)
        if issues:
            raise PipelineSpecError(issues=issues)
        return dump(data)

    def explain(self) -> str:
        """The logical plan, the optimized plan with engines, and the lowered engine job."""
        from dataflow.engines.registry import explain_pipeline

        # Without a sink, the results (to_pandas, count...) keep their counters and errors in a staging folder.
        data = self._data if "sink" in self._data else {**self._data, "sink": {"uri": "<staging folder>/output", "format": "parquet"}}
        return explain_pipeline(parse_pipeline(data))

    def __repr__(self) -> str:
        data = self._data
        steps = " -> ".join(s.get("op", "?") for s in data.get("steps", []))
        return f"Pipeline({data.get('name')!r}: {data.get('source', {}).get('uri')} -> {steps or '(no steps)'} -> {data.get('sink', {}).get('uri')})"

    def _repr_html_(self) -> str:
        """The plan in a notebook: source, each step with its engine and params, sink."""
        from dataflow.report.notebook import pipeline_html

        return pipeline_html(self._data)

    # -- execution ----------------------------------------------------------------------------
    def run(self, **options: Any):
        """Run to the sink and commit; return the RunReport. Options as ``RunOptions``."""
        from dataflow.engines.base import RunOptions
        from dataflow.runner import run_pipeline

        return run_pipeline(self.spec, RunOptions(**options))

    def take(self, n: int = 10, **options: Any) -> list[dict[str, Any]]:
        """Run on the first inputs without writing and return ``n`` output rows."""
        from dataflow.engines.base import RunOptions
        from dataflow.runner import take_rows

        data = self._data if "sink" in self._data else {**self._data, "sink": {"uri": "unused"}}
        return take_rows(parse_pipeline(data), n, RunOptions(**options))

    def preview(self, n: int = 8):
        """Run the steps on the first ``n`` inputs in this process (no cluster) and show what happened.

        Returns a ``PreviewRows``: the kept rows, plus each input's outcome (kept, or which step
        dropped or refused it and why); in a notebook it shows thumbnails, audio players and text.
        """
        from dataflow.report.preview import preview_pipeline

        data = self._data if "sink" in self._data else {**self._data, "sink": {"uri": "unused"}}
        return preview_pipeline(parse_pipeline(data), n)


def _rename_op(data: dict[str, Any], path: tuple, name: str) -> None:
    node: Any = data
    for key in path:
        node = node[key]
    node["op"] = name


def _spec_data(spec: PipelineSpec) -> dict[str, Any]:
    body = spec.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    return {"version": spec.version, "name": spec.name, **body}


def read(uri: str, *, format: str, name: str = "pipeline", **options: Any) -> Pipeline:
    """Start a pipeline reading ``uri`` as ``format`` (image, audio, binary, text, jsonl, parquet, csv).

    Args:
        uri: A path or URI (``s3://``, ``hdfs://``, ...).
        format: The source format.
        name: The pipeline's name.
        **options: Source options, e.g. ``recursive=False`` or ``split="line"``.
    """
    source: dict[str, Any] = {"uri": uri, "format": format}
    if options:
        source["options"] = options
    return Pipeline({"version": 1, "name": name, "source": source})
