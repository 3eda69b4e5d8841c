"""Pydantic models of a pipeline: the public YAML contract.

Every model forbids unknown keys, so a misspelt key is reported with its place in the file.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

__all__ = [
    "CacheSpec",
    "ErrorsSpec",
    "NamedSourceSpec",
    "PipelineSpec",
    "ResourcesSpec",
    "SinkSpec",
    "SourceSpec",
    "StageSpec",
    "StepSpec",
    "StorageSpec",
]

MEMORY_OPTION = "memory"  # the source option naming an in-memory source (set by dataflow.memory, never in YAML)
SourceFormat = Literal["audio", "binary", "csv", "image", "jsonl", "parquet", "text", "webdataset"]
SinkFormat = Literal["files", "jsonl", "parquet", "webdataset"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourcesSpec(_Model):
    """Per-step resources, in Ray's words; each overrides the op's declared default."""

    num_cpus: float | None = Field(None, ge=0, description="CPUs per task or actor.")
    num_gpus: float | None = Field(None, ge=0, description="GPUs per task or actor.")
    memory: int | None = Field(None, ge=0, description="Bytes of memory per task or actor.")
    concurrency: int | None = Field(None, ge=1, description="Actors in the pool, or parallel tasks.")
    batch_size: int | None = Field(None, ge=1, description="Rows per batch.")


class SourceSpec(_Model):
    """Where the input comes from and how to read it."""

    uri: str = Field(description="A path, file:// or any supported scheme (s3://, hdfs://, ...).")
    format: SourceFormat = Field(
        description="How to turn the files into rows; webdataset reads tar shards of <key>.<ext> members, one row per key "
        "(options: bytes_from, the member extensions that fill the bytes column)."
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Reader options (see the README).")

    @field_validator("options")
    @classmethod
    def _line_limit(cls, options: dict[str, Any]) -> dict[str, Any]:
        from connectors.formats.lines import max_line_bytes

        max_line_bytes(options)  # a size of at least one byte, where given: checked before any file is read
        return options

    @property
    def in_memory(self) -> str | None:
        """The name of an in-memory source (``dataflow.from_pandas`` and friends stage it as Parquet), else None."""
        return self.options.get(MEMORY_OPTION)


class StepSpec(_Model):
    """One operator applied to the rows."""

    op: str = Field(description="A registered op name or a 'module:function' reference.")
    params: dict[str, Any] = Field(default_factory=dict, description="The op's keyword parameters.")
    resources: ResourcesSpec | None = Field(None, description="Overrides of the op's resources.")
    _model: Any = PrivateAttr(None)

    def params_of(self, op: Any) -> Any:
        """``params`` as ``op``'s param model: validated on the first call (parse or plan time), then kept.

        Raises:
            pydantic.ValidationError: the params do not fit ``op.params``.
        """
        if type(self._model) is not op.params:
            self._model = op.params(**self.params)
        return self._model

    def __eq__(self, other: object) -> bool:
        # The kept model is a cache of ``params``: equal steps stay equal whether validated or not.
        return type(other) is type(self) and self.__dict__ == other.__dict__


class NamedSourceSpec(SourceSpec):
    """A source declared under ``sources:``; ops refer to it by name (``table.join: {right: name}``)."""

    steps: list[StepSpec] = Field(default_factory=list, description="Table steps that prepare this source before it is used.")


class StageSpec(_Model):
    """A run of steps on one engine; a pipeline with stages hands rows from one engine to the next."""

    name: str = Field(description="Stage name (shown by explain).")
    engine: Literal["auto", "ray", "spark"] = Field("auto", description="Engine of this stage, or auto to let the planner pick.")
    steps: list[StepSpec] = Field(default_factory=list)


class SinkSpec(_Model):
    """Where the output goes."""

    uri: str = Field(description="Output directory (committed atomically).")
    format: SinkFormat = Field(
        "parquet", description="parquet, jsonl, files (a bytes column as files), or webdataset (tar shards of <key>.<ext> members)."
    )
    mode: Literal["error", "overwrite", "append"] = Field(
        "error", description="error refuses a sink with committed output; overwrite replaces it; append adds."
    )
    rows_per_file: int | None = Field(None, ge=1, description="Upper bound of rows in one output file.")
    max_file_bytes: int | None = Field(None, ge=1, description="Upper bound of bytes in one output file.")
    lineage: bool = Field(
        True, description="Write dataflow's lineage column __source__ (input URI and row position) next to the user's columns; false leaves it out."
    )
    keep: list[str] = Field(
        default_factory=list,
        description="Columns to write even though a step consumed them (a decode's encoded bytes, which the sink otherwise leaves out; "
        "dataflow explain lists what it leaves out).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Format options: for files, 'column' (bytes column, default 'bytes') and "
        "'extension' (default from the 'format' column or 'bin'); for webdataset, 'extension' of the bytes member.",
    )


class ErrorsSpec(_Model):
    """The error budget; row errors always go to <sink>/_errors/."""

    max_error_ratio: float | None = Field(None, ge=0, le=1, description="Fail the run above this share of rows.")
    max_errors: int | None = Field(None, ge=0, description="Fail the run above this many row errors.")


class CacheSpec(_Model):
    """The node-local cache tier: remote inputs are read once per node, then from local disk."""

    dir: str = Field(description="Cache directory on node-local disk, shared by every worker of the node (e.g. /mnt/nvme/dataflow).")
    max_bytes: int | None = Field(
        None, ge=1, description="Size bound: bytes or a size such as 200GB or 512GiB; default 90% of the free space of dir."
    )

    @field_validator("max_bytes", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        from connectors.registry import parse_size

        return None if value is None else parse_size(value)


class StorageSpec(_Model):
    """Filesystem options per URI scheme, e.g. {s3: {endpoint_url: ...}}, and the cache tier."""

    options: dict[str, dict[str, Any]] = Field(default_factory=dict, description="fsspec options per scheme.")
    cache: CacheSpec | None = Field(
        None, description="Read remote sources through a node-local cache: {dir, max_bytes} (or --cache-dir / DATAFLOW_CACHE_DIR)."
    )


class PipelineSpec(_Model):
    """A whole pipeline: source, steps, sink and run settings."""

    version: Literal[1] = Field(1, description="Spec version.")
    name: str = Field(description="Pipeline name (used in reports and run ids).")
    engine: Literal["auto", "ray", "spark"] = Field("auto", description="Engine, or auto to let the planner pick.")
    source: SourceSpec = Field(description="The main input; without it, the first entry of sources is.")
    sources: dict[str, NamedSourceSpec] = Field(default_factory=dict, description="Named inputs that ops refer to by name.")
    steps: list[StepSpec] = Field(default_factory=list)
    stages: list[StageSpec] = Field(default_factory=list, description="Instead of steps: runs of steps, each on its own engine.")
    sink: SinkSpec
    errors: ErrorsSpec = Field(default_factory=ErrorsSpec)
    storage: StorageSpec = Field(default_factory=StorageSpec)

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ \t\n"):
            raise ValueError("must be a non-empty name without slashes or spaces")
        return value

    @model_validator(mode="before")
    @classmethod
    def _main_source_from_sources(cls, data: Any) -> Any:
        if isinstance(data, dict) and "source" not in data and isinstance(data.get("sources"), dict) and data["sources"]:
            first = next(iter(data["sources"].values()))
            if isinstance(first, dict):
                if first.get("steps"):
                    raise ValueError(
                        "the first entry of sources is the main input when there is no source:, and cannot have steps "
                        "(put them under steps: or stages:, or declare the main input under source:)"
                    )
                return {**data, "source": {k: v for k, v in first.items() if k != "steps"}}
        return data

    @model_validator(mode="after")
    def _steps_or_stages(self) -> PipelineSpec:
        if self.steps and self.stages:
            raise ValueError("use either steps: or stages:, not both")
        names = [s.name for s in self.stages]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"stage names must be unique, got {', '.join(twice)} more than once")
        return self

    def indexed_steps(self) -> list[tuple[tuple[str | int, ...], StepSpec]]:
        """Every step with its key path, in step-index order: main steps (or stages), then named sources'."""
        if self.stages:
            out = [(("stages", i, "steps", j), step) for i, stage in enumerate(self.stages) for j, step in enumerate(stage.steps)]
        else:
            out = [(("steps", i), step) for i, step in enumerate(self.steps)]
        return out + [(("sources", name, "steps", j), step) for name, src in self.sources.items() for j, step in enumerate(src.steps)]

    @property
    def all_steps(self) -> list[StepSpec]:
        """Every step in step-index order (see ``indexed_steps``)."""
        return [step for _, step in self.indexed_steps()]
