"""Pydantic models of a pipeline: the public YAML contract.

Every model forbids unknown keys, so a misspelt key is reported with its place in the file.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "SINK_FORMATS",
    "SOURCE_FORMATS",
    "ErrorsSpec",
    "PipelineSpec",
    "ResourcesSpec",
    "SinkSpec",
    "SourceSpec",
    "StepSpec",
    "StorageSpec",
]

SOURCE_FORMATS = ("audio", "binary", "csv", "image", "jsonl", "parquet", "text")
SINK_FORMATS = ("files", "jsonl", "parquet")
SourceFormat = Literal["audio", "binary", "csv", "image", "jsonl", "parquet", "text"]
SinkFormat = Literal["files", "jsonl", "parquet"]


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
    format: SourceFormat = Field(description="How to turn the files into rows.")
    options: dict[str, Any] = Field(default_factory=dict, description="Reader options (see the README).")


class StepSpec(_Model):
    """One operator applied to the rows."""

    op: str = Field(description="A registered op name or a 'module:function' reference.")
    params: dict[str, Any] = Field(default_factory=dict, description="The op's keyword parameters.")
    resources: ResourcesSpec | None = Field(None, description="Overrides of the op's resources.")


class SinkSpec(_Model):
    """Where the output goes."""

    uri: str = Field(description="Output directory (committed atomically).")
    format: SinkFormat = Field("parquet", description="parquet, jsonl, or files (a bytes column as files).")
    mode: Literal["error", "overwrite", "append"] = Field(
        "error", description="error refuses a sink with committed output; overwrite replaces it; append adds."
    )
    rows_per_file: int | None = Field(None, ge=1, description="Upper bound of rows in one output file.")
    max_file_bytes: int | None = Field(None, ge=1, description="Upper bound of bytes in one output file.")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Format options: for files, 'column' (bytes column, default 'bytes') and "
        "'extension' (default from the 'format' column or 'bin').",
    )


class ErrorsSpec(_Model):
    """The error budget; row errors always go to <sink>/_errors/."""

    max_error_ratio: float | None = Field(None, ge=0, le=1, description="Fail the run above this share of rows.")
    max_errors: int | None = Field(None, ge=0, description="Fail the run above this many row errors.")


class StorageSpec(_Model):
    """Filesystem options per URI scheme, e.g. {s3: {endpoint_url: ...}}."""

    options: dict[str, dict[str, Any]] = Field(default_factory=dict, description="fsspec options per scheme.")


class PipelineSpec(_Model):
    """A whole pipeline: source, steps, sink and run settings."""

    version: Literal[1] = Field(1, description="Spec version.")
    name: str = Field(description="Pipeline name (used in reports and run ids).")
    engine: Literal["auto", "ray", "spark"] = Field("auto", description="Engine, or auto to let the planner pick.")
    source: SourceSpec
    steps: list[StepSpec] = Field(default_factory=list)
    sink: SinkSpec
    errors: ErrorsSpec = Field(default_factory=ErrorsSpec)
    storage: StorageSpec = Field(default_factory=StorageSpec)

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ \t\n"):
            raise ValueError("must be a non-empty name without slashes or spaces")
        return value
