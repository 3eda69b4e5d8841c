"""Run a pipeline document to a Parquet sink and read back what it wrote: its rows and its error records."""
from __future__ import annotations

import json
import pathlib
from typing import Any

import pyarrow.parquet as pq

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline


def written(sink: pathlib.Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of a committed Parquet sink's files and its ``_errors/`` records."""
    rows = [r for p in sorted(sink.glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    errors = [r for p in sorted((sink / "_errors").glob("*.jsonl")) for r in map(json.loads, p.read_text().splitlines())]
    return rows, errors


def run_doc(doc: dict[str, Any]):
    """Run ``doc`` (its sink a local Parquet folder) quietly: the report, the rows written and the error records."""
    report = run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    return (report, *written(pathlib.Path(doc["sink"]["uri"])))
