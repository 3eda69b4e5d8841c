"""Per-step counters of a Spark job: its observations, read once the job's action has run, as StepStats.

Each checked step (and each step that ends a run of map steps) is a ``DataFrame.observe`` node;
a map step between them keeps the row count, so it is counted by the next observation. A native
aggregate counts its input rows in a hidden aggregation (``rows_in``, summed by its observation
over its few output rows), so the step before it needs no observation of its own. A Python step
that may drop rows sums its own count of them (``drops``); other steps' drops are their input
less their output and bad rows.

Spark's adaptive execution may drop a stage it has already run from the final plan (a join side
that came out empty is replaced by an empty relation); the observations inside it are then
completed with an empty row, which PySpark's ``Observation.get`` cannot convert (a Java
``AssertionError``). ``keep_observed`` turns that rule off while a job runs, and an empty row
still reads as "no counters" rather than an error.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from pyspark.sql import Observation

from dataflow.runtime.stage import StepStats

__all__ = ["NAMED_READ_STEP", "READ_STEP", "Observed", "bad_rows", "job_stats", "keep_observed", "read_part", "step_part"]

READ_STEP = -1
NAMED_READ_STEP = -2  # bad records of named sources: row errors, but not the run's input rows
_OBSERVATION_WAIT_S = 30.0
_EXCLUDED_RULES = "spark.sql.adaptive.optimizer.excludedRules"
_PRUNES_RUN_STAGES = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"


@dataclass
class Observed:
    """A node's counters: observed, or (``observation`` None) the next map step's input count.

    ``view`` maps the observation's metrics to this node's ``rows``/``bad`` where one
    observation counts two nodes (a read check folded into the first step's).
    """

    index: int
    op: str
    drops_rows: bool  # the input rows it does not pass on, less its bad ones, are drops (filters, dedups)
    observation: Observation | None
    chain: str
    view: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def read_part(m: dict[str, Any]) -> dict[str, Any]:
    """The read's share of an observation that counts the read's check and the first step's."""
    return {"rows": m.get("rows"), "bad": m.get("read_bad")}


def step_part(m: dict[str, Any]) -> dict[str, Any]:
    """The first step's share of an observation that counts the read's check and the first step's."""
    read_bad = int(m.get("read_bad") or 0)
    return {"rows": int(m.get("rows") or 0) - read_bad, "bad": int(m.get("bad") or 0) - read_bad}


@contextlib.contextmanager
def keep_observed(spark) -> Iterator[None]:
    """Run the job's actions with the adaptive rule that drops already-run stages (and their counters) turned off.

    Other excluded rules the session sets are kept; the session's setting is restored afterwards.
    """
    before = spark.conf.get(_EXCLUDED_RULES, None)
    rules = [r for r in (before or "").split(",") if r.strip()]
    if _PRUNES_RUN_STAGES in rules:
        yield
        return
    spark.conf.set(_EXCLUDED_RULES, ",".join([*rules, _PRUNES_RUN_STAGES]))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(_EXCLUDED_RULES)
        else:
            spark.conf.set(_EXCLUDED_RULES, before)


def _read(observation: Observation) -> dict[str, Any] | None:
    # NOTE: an observation whose stage left the final plan holds an empty row; Observation.get
    # would raise on it (PySpark's toPyRow asserts a row with a schema).
    row = observation._jo.getRow()  # waits for the query's end
    return observation.get if row.size() else None


_got: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # observation -> its metrics (or None), read once


def _get(observation: Observation) -> dict[str, Any] | None:
    """The observation's metrics, or None when its query never ran (a branch Spark pruned) or they were lost.

    Read once: the error write and the counters both ask, and a query that never ran costs a wait.
    """
    if observation not in _got:
        box: dict[str, Any] = {}
        waiter = threading.Thread(target=lambda: box.update(value=_read(observation)), daemon=True)
        waiter.start()
        waiter.join(_OBSERVATION_WAIT_S)
        _got[observation] = box.get("value")
    return _got[observation]


def bad_rows(observation: Observation) -> int | None:
    """Rows a checked step flagged, by its counters (None: its query never reported them)."""
    metrics = _get(observation)
    return None if metrics is None else int(metrics.get("bad") or 0)


def _chain_stats(nodes: list[Observed], counted_read: bool) -> dict[int, StepStats]:
    got = {o: _get(o) for o in dict.fromkeys(n.observation for n in nodes if n.observation is not None)}  # one observation may count two nodes
    metrics = [None if got.get(n.observation) is None else (n.view or dict)(got[n.observation]) for n in nodes]
    if any(m is None and n.observation is not None for m, n in zip(metrics, nodes)):
        return {}  # a query that never ran: no counters rather than wrong ones
    out: list[int] = [0] * len(nodes)
    for i in reversed(range(len(nodes))):
        m = metrics[i]
        if m is not None:
            out[i] = int(m.get("rows") or 0) - int(m.get("bad") or 0)
        else:  # the next step is a map, or an aggregate that counted its input: it saw exactly these rows
            nxt = metrics[i + 1]
            out[i] = int(nxt.get("rows_in", nxt.get("rows")) or 0) if nxt is not None else out[i + 1]
    stats: dict[int, StepStats] = {}
    for i, n in enumerate(nodes):
        bad = int((metrics[i] or {}).get("bad") or 0)
        rows_in = out[i - 1] if i else out[i] + bad
        st = StepStats(rows_in=rows_in, rows_out=out[i], rows_errored=bad)
        if n.index == READ_STEP:
            if counted_read:
                stats[READ_STEP] = st
            elif bad:
                stats[NAMED_READ_STEP] = StepStats(rows_errored=bad)
            continue
        dropped = st.rows_in - st.rows_out - bad
        if (metrics[i] or {}).get("drops") is not None:  # a Python step counted its drops itself (a flat map may also expand rows)
            st.drops[n.op] = int(metrics[i]["drops"])
        elif n.drops_rows and dropped >= 0:
            st.drops[n.op] = dropped
        stats[n.index] = st
    return stats


def job_stats(observed: list[Observed], counted_read: bool) -> dict[int, StepStats]:
    """The StepStats of every observed step, by step index; ``counted_read``: the main chain's read rows are the run's input rows."""
    stats: dict[int, StepStats] = {}
    for chain in dict.fromkeys(o.chain for o in observed):
        nodes = [o for o in observed if o.chain == chain]
        for index, st in _chain_stats(nodes, counted_read and chain == "main").items():
            stats.setdefault(index, StepStats()).add(st)
    return stats
