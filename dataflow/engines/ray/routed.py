"""Run a Ray Data function per shard inside one streaming execution over every shard of a run.

A routed function is given each batch split by shard (``ShardRoutes``, by the input file a
column names); before each part it is pointed at that shard's places: its ``side`` outputs
(counters, row errors, cache and I/O counters) and, for writers, its ``tmp_data`` folder. A
part of one shard is what the function would have seen in that shard's own execution, so the
per-shard counters and files are those of the per-shard path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from dataflow.batch import Columns, length, take
from dataflow.runtime.routes import ShardRoutes
from dataflow.runtime.stats import SideOutputs

__all__ = ["SHARD", "Routed", "ShardPlace"]

SHARD = "__shard__"  # a routed writer's output column: the shard's position in the routes


@dataclass(frozen=True)
class ShardPlace:
    """Where one shard's tasks write: its side outputs and its data folder."""

    side: SideOutputs
    tmp_data: str


class Routed:
    """A batch function (``fn``, or ``cls(**kwargs)`` built once in its worker: actor pools) run per shard.

    ``key``: the column naming each row's input (``__source__``, or ``uri``/``path`` before the
    read adapter). ``tag``: add the shard's position to the outputs (``SHARD``; the writers).
    """

    def __init__(self, routes: ShardRoutes[ShardPlace], key: str, fn: Any = None, cls: type | None = None, kwargs: dict[str, Any] | None = None, tag: bool = False):
        self.routes, self.key, self.fn, self.cls, self.kwargs, self.tag = routes, key, fn, cls, kwargs or {}, tag

    def __call__(self, batch: pa.Table | Columns) -> Iterator[Any]:
        if self.fn is None:
            self.fn = self.cls(**self.kwargs)
        arrow = isinstance(batch, pa.Table)
        if self.key not in (batch.column_names if arrow else batch):
            raise KeyError(f"a streamed run routes rows to shards by column '{self.key}', but a batch has only {sorted(batch.column_names if arrow else batch)}")
        for pos, rows in self.routes.groups(batch[self.key]):
            part = batch if rows is None else (batch.take(pa.array(rows)) if arrow else take(batch, rows))
            place = self.routes.payloads[pos]
            self.fn.side = place.side
            if hasattr(self.fn, "tmp_data"):
                self.fn.tmp_data = place.tmp_data
            out = self.fn(part)
            for piece in (out if isinstance(out, Iterator) else [out]):
                yield self._tagged(piece, pos) if self.tag else piece

    @staticmethod
    def _tagged(piece: Any, pos: int) -> Any:
        if isinstance(piece, pa.Table):
            return piece.append_column(SHARD, pa.array(np.full(piece.num_rows, pos, dtype=np.int64)))
        return {**piece, SHARD: np.full(length(piece), pos, dtype=np.int64)}
