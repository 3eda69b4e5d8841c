"""A routed batch function sees one shard's rows at a time, pointed at that shard's places."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataflow.engines.ray.routed import SHARD, Routed, ShardPlace
from dataflow.runtime.routes import ShardRoutes
from dataflow.runtime.stats import SideOutputs


def _routes():
    places = [ShardPlace(SideOutputs("/s", {}, f"/tmp/{i}/_stats", f"/tmp/{i}/_errors"), f"/tmp/{i}/data") for i in range(3)]
    return ShardRoutes(["/in/a", "/in/d", "/in/g"], places)


class Recorder:
    def __init__(self):
        self.side, self.tmp_data, self.seen = None, None, []

    def __call__(self, batch):
        sources = batch["__source__"].to_pylist() if isinstance(batch, pa.Table) else list(batch["__source__"])
        self.seen.append((self.side.stats_dir, self.tmp_data, sources))
        return {"n": np.array([len(sources)])}


def test_a_batch_over_shards_is_split_in_shard_order_with_each_shards_places():
    fn = Recorder()
    batch = pa.table({"__source__": ["/in/h#line=1", "/in/b#line=2", "/in/e", "/in/c#line=9"]})
    out = list(Routed(_routes(), "__source__", fn=fn, tag=True)(batch))
    assert fn.seen == [("/tmp/0/_stats", "/tmp/0/data", ["/in/b#line=2", "/in/c#line=9"]), ("/tmp/1/_stats", "/tmp/1/data", ["/in/e"]),
                       ("/tmp/2/_stats", "/tmp/2/data", ["/in/h#line=1"])]
    assert [(int(o["n"][0]), int(o[SHARD][0])) for o in out] == [(2, 0), (1, 1), (1, 2)]


def test_generator_functions_built_in_the_worker_and_numpy_batches():
    class Twice(Recorder):
        def __call__(self, batch):
            yield from (super().__call__(batch), super().__call__(batch))

    routed = Routed(_routes(), "uri", cls=Twice)
    out = list(routed({"uri": np.array(["/in/a", "/in/f"], dtype=object), "__source__": np.array(["x", "y"], dtype=object)}))
    assert len(out) == 4 and [s[0] for s in routed.fn.seen] == ["/tmp/0/_stats", "/tmp/0/_stats", "/tmp/1/_stats", "/tmp/1/_stats"]
    assert list(routed({"uri": np.array([], dtype=object)})) == []


def test_a_batch_without_the_routing_column_names_it():
    with pytest.raises(KeyError, match="by column '__source__'"):
        list(Routed(_routes(), "__source__", fn=Recorder())(pa.table({"x": [1]})))
