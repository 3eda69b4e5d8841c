"""The stage before an aggregation (its checkpoint, or the global stage itself) and its partial states, as one map (``runtime.fused_sql``).

Each batch runs as one DuckDB query where ``FusedAggregate`` can run it, else as the stage's steps
one by one followed by the partial aggregation (``StageFn`` then ``_PartialAggregate``): the same
states, counters and row errors either way.
"""
from __future__ import annotations

import pyarrow as pa

from dataflow.batch import from_arrow, plain_arrow, to_arrow
from dataflow.columns import SOURCE
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["FusedStageFn", "fused_stage"]


def fused_stage(stage, call) -> object | None:
    """The split of the aggregation ``call`` when ``stage`` (a RayStage of tasks) can run with its partial states as one query, else None.

    ``call`` is the aggregation that reads the stage's rows: the checkpoint's (a run's map phase)
    or the global stage's right after it (a run in one phase).
    """
    from dataflow.engines.ray.global_ops import _two_phase
    from dataflow.runtime.fused_sql import fusable

    if call is None or call.op.name != "table.aggregate" or stage.compute != "tasks" or not fusable(list(stage.calls)):
        return None
    return _two_phase(call.params)


class FusedStageFn:
    """``stage`` then ``call``'s partial states (``split``) per batch: one query, else step by step; counters under both steps' names."""

    def __init__(self, stage, call, split, partial_name: str, side: SideOutputs):
        self.stage, self.call, self.split, self.partial_name, self.side = stage, call, split, partial_name, side
        self._fused = self._steps = None

    def fused(self):
        """The stage and the partial states as one query (``runtime.fused_sql.FusedAggregate``), built in the worker on first use."""
        from dataflow.runtime.fused_sql import FusedAggregate
        from dataflow.runtime.stage import StageExecutor

        if self._fused is None:
            keys = list(self.call.params.keys or [])
            self._fused = FusedAggregate(list(self.stage.calls), list(self.stage.keeps) or [None] * len(self.stage.calls), self.split, keys)
            self._steps = StageExecutor(list(self.stage.calls), keeps=list(self.stage.keeps) or None)
        return self._fused

    def __call__(self, batch: pa.Table) -> pa.Table:
        from dataflow.engines.ray.global_ops import _PartialAggregate

        key = batch_key(batch.column(SOURCE) if SOURCE in batch.column_names else [])
        done = self.fused().run(batch) if plain_arrow(batch) else None
        if done is not None:
            states, stats, partial = done
            self.side.write(self.stage.name, key, [], stats)
            self.side.write(f"{self.partial_name}-partial", key, [], {self.call.index: partial})
            return states
        out, errors, stats = self._steps.run(batch if plain_arrow(batch) else from_arrow(batch))
        self.side.write(self.stage.name, key, errors, stats)
        return _PartialAggregate(self.partial_name, self.call, self.side, self.split)(out if isinstance(out, pa.Table) else to_arrow(out))
