"""Place a pipeline's resource demand on a cluster within windows, reserves and shares, with reasons.

What a cluster lends now, per resource: ``min(idle - reserve, max_share * total)`` (and, on
Kubernetes, what its Volcano queue still admits). A cluster fits when that covers the largest
single worker of the pipeline (a read task needs one CPU) and one of its nodes has room for it;
GPU stages count only GPUs of the asked model. Among clusters that fit, the highest ``priority``
wins, then the most idle. The chosen cluster's lendable amount caps the run (``--max-cpus``).
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Iterable

from dataflow.broker.capacity import Amount, Capacity
from dataflow.broker.clusters import Cluster, Fleet, KubernetesCluster, window_state
from dataflow.errors import DataflowError

__all__ = ["Demand", "NoCapacityError", "Placement", "StageDemand", "Verdict", "demand_of", "gpu_type_matches", "lendable", "place"]

READ_TASK_CPUS = 1.0  # Ray's default for a task: every read and task stage needs a whole CPU
_EPS = 1e-9


@dataclass(frozen=True)
class StageDemand:
    """What one stage of the lowered plan asks for, per worker."""

    name: str
    label: str
    num_cpus: float
    num_gpus: float
    concurrency: int | None
    gpu_type: str | None = None


@dataclass(frozen=True)
class Demand:
    """A pipeline's resource demand: its stages, the largest worker, and the total at full concurrency."""

    pipeline: str
    stages: tuple[StageDemand, ...]

    @property
    def worker(self) -> Amount:
        """The largest single worker: what a cluster must lend for the run to make progress."""
        cpus = max([READ_TASK_CPUS, *(s.num_cpus for s in self.stages)])
        return Amount(cpus, max([0.0, *(s.num_gpus for s in self.stages)]))

    @property
    def gpu_type(self) -> str | None:
        return next((s.gpu_type for s in self.stages if s.num_gpus and s.gpu_type), None)

    @property
    def wanted(self) -> Amount:
        """CPUs and GPUs of every stage at its declared concurrency (one worker where none is declared)."""
        total = Amount(READ_TASK_CPUS)
        for s in self.stages:
            n = s.concurrency or 1
            total = total.plus(Amount(s.num_cpus * n, s.num_gpus * n))
        return total

    def describe(self) -> str:
        w = self.worker
        gpu = f", {w.gpus:g} GPU" + (f" ({self.gpu_type})" if self.gpu_type else "") if w.gpus else ", no GPU"
        stages = "; ".join(
            f"{s.name} [{s.label}]: {s.num_cpus:g} CPU" + (f" {s.num_gpus:g} GPU" if s.num_gpus else "") + (f" x{s.concurrency}" if s.concurrency else "")
            for s in self.stages
        )
        return f"largest worker {w.cpus:g} CPU{gpu}; {stages}" if stages else f"largest worker {w.cpus:g} CPU{gpu}"


def demand_of(pipeline: str, stages: Iterable[Any], gpu_type: str | None = None) -> Demand:
    """The demand of lowered stages (objects with ``name``, ``label``, ``num_cpus``, ``num_gpus``, ``concurrency``).

    A stage without ``num_cpus`` (a task, or a global step) needs Ray's default of one CPU.
    ``gpu_type`` is the GPU model GPU stages need (``--gpu-type``), e.g. ``A100``.
    """
    out = []
    for s in stages:
        cpus = getattr(s, "num_cpus", None)
        gpus = getattr(s, "num_gpus", None) or 0.0
        out.append(StageDemand(s.name, s.label, READ_TASK_CPUS if cpus is None else float(cpus), float(gpus), getattr(s, "concurrency", None), gpu_type if gpus else None))
    return Demand(pipeline, tuple(out))


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t}


def gpu_type_matches(wanted: str, have: str | None) -> bool:
    """``A100`` matches ``NVIDIA-A100-SXM4-80GB`` and ``nvidia-tesla-a100``, not ``A10``: every token of ``wanted`` appears."""
    return bool(have) and _tokens(wanted) <= _tokens(have)


def lendable(cluster: Cluster, cap: Capacity) -> Amount:
    """What the cluster lends now: ``min(idle - reserve, max_share * total)``, never below zero, within the queue."""
    r, share = cluster.reserve, cluster.max_share
    values = [max(0.0, min(i - keep, share * t)) for i, keep, t in zip(
        (cap.idle.cpus, cap.idle.gpus, cap.idle.memory), (r.num_cpus, r.num_gpus, r.memory), (cap.total.cpus, cap.total.gpus, cap.total.memory)
    )]
    if cap.limit is not None:
        values = [max(0.0, min(v, q)) for v, q in zip(values, (cap.limit.cpus, cap.limit.gpus, cap.limit.memory))]
    return Amount(*values)


@dataclass(frozen=True)
class Verdict:
    """Whether one cluster can run the demand now, what it lends, and why."""

    cluster: str
    kind: str
    fits: bool
    runnable: bool
    priority: int
    lend: Amount
    reasons: tuple[str, ...]
    chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "fits": self.fits, "chosen": self.chosen, "lend": vars(self.lend), "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Placement:
    """The verdict of every cluster and the chosen one (None: nothing fits now)."""

    demand: Demand
    verdicts: tuple[Verdict, ...]
    chosen: Verdict | None = None

    def explain(self) -> str:
        lines = [f"placement of '{self.demand.pipeline}' ({self.demand.describe()}):"]
        width = max([len(v.cluster) for v in self.verdicts] or [1])
        for v in self.verdicts:
            mark = "chosen" if v.chosen else ("fits" if v.fits and v.runnable else "no")
            lines.append(f"  {v.cluster:<{width}}  {mark:<6}  " + "; ".join(v.reasons))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"demand": self.demand.describe(), "chosen": self.chosen.cluster if self.chosen else None, "verdicts": [v.to_dict() for v in self.verdicts]}


def _gpu_room(cap: Capacity, demand: Demand) -> tuple[float, float]:
    """(idle GPUs of the asked model, the most idle such GPUs on one node)."""
    nodes = [n for n in cap.nodes if demand.gpu_type is None or gpu_type_matches(demand.gpu_type, n.gpu_type)]
    return sum(n.idle.gpus for n in nodes), max([0.0, *(n.idle.gpus for n in nodes)])


def _evaluate(cluster: Cluster, cap: Capacity, demand: Demand, now: dt.datetime, cooldown: dict[str, str]) -> Verdict:
    kind = "kubernetes" if isinstance(cluster, KubernetesCluster) else "ray"

    def verdict(fits: bool, *reasons: str, lend: Amount = Amount()) -> Verdict:
        return Verdict(cluster.name, kind, fits, kind == "ray", cluster.priority, lend, reasons)

    if cluster.name in cooldown:
        return verdict(False, cooldown[cluster.name])
    is_open, window = window_state(cluster, now)
    if not is_open:
        return verdict(False, f"window {window}")
    if cap.error:
        return verdict(False, cap.error)
    if cap.queue is not None and cap.queue.get("state") != "Open":
        return verdict(False, cap.queue.get("error") or f"Volcano queue '{cap.queue['name']}' is {cap.queue.get('state')} (expected Open)")
    lend, need = lendable(cluster, cap), demand.worker
    terms = f"idle {cap.idle.describe()} of {cap.total.describe()}; reserve {cluster.reserve.num_cpus:g} CPU {cluster.reserve.num_gpus:g} GPU; max_share {cluster.max_share:g}"
    if lend.cpus + _EPS < need.cpus:
        return verdict(False, f"needs {need.cpus:g} CPU for one worker, lends {lend.cpus:g} ({terms})", lend=lend)
    if max((n.idle.cpus for n in cap.nodes), default=0.0) + _EPS < need.cpus:
        return verdict(False, f"no node has {need.cpus:g} idle CPU for one worker ({terms})", lend=lend)
    if need.gpus:
        typed, on_one_node = _gpu_room(cap, demand)
        lend = Amount(lend.cpus, min(lend.gpus, typed), lend.memory)
        model = f" {demand.gpu_type}" if demand.gpu_type else ""
        have = ", ".join(f"{t}: {i:g} idle of {n:g}" for t, (i, n) in cap.gpu_types().items()) or f"{cap.total.gpus:g} GPU"
        if lend.gpus + _EPS < need.gpus or on_one_node + _EPS < need.gpus:
            return verdict(False, f"needs {need.gpus:g}{model} GPU for one worker, lends {lend.gpus:g} (has {have}; {terms})", lend=lend)
    reasons = [f"fits: lends {lend.describe()} ({terms})"]
    if kind != "ray":
        reasons.append("Kubernetes clusters are probed and placed here; run there with 'dataflow k8s submit'")
    return verdict(True, *reasons, lend=lend)


def _rank(v: Verdict, demand: Demand) -> tuple:
    return (-v.priority, -(v.lend.gpus if demand.worker.gpus else 0.0), -v.lend.cpus)


def place(
    fleet: Fleet, capacity: dict[str, Capacity], demand: Demand, *, only: str | None = None,
    now: dt.datetime | None = None, cooldown: dict[str, str] | None = None,
) -> Placement:
    """Judge every cluster and choose one: ``only`` (``--cluster NAME``), or the best that fits.

    ``cooldown`` maps clusters this run gave back to the reason they are skipped.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    verdicts = [_evaluate(c, capacity[c.name], demand, now, cooldown or {}) for c in fleet.clusters]
    candidates = sorted((v for v in verdicts if v.fits and v.runnable and (only is None or v.cluster == only)), key=lambda v: _rank(v, demand))
    if not candidates:
        return Placement(demand, tuple(verdicts))
    best = candidates[0]
    out: list[Verdict] = []
    for v in verdicts:
        if v is best:
            why = "the cluster asked for" if only else f"priority {v.priority}" + (", most idle" if len(candidates) > 1 else "")
            v = Verdict(v.cluster, v.kind, True, True, v.priority, v.lend, (*v.reasons, f"chosen: {why}"), chosen=True)
        elif v in candidates:
            v = Verdict(v.cluster, v.kind, True, True, v.priority, v.lend, (*v.reasons, f"not chosen: {best.cluster} ranks first (priority, then idle)"))
        elif only and v.fits and v.cluster != only:
            v = Verdict(v.cluster, v.kind, True, v.runnable, v.priority, v.lend, (*v.reasons, f"not asked for (--cluster {only})"))
        out.append(v)
    return Placement(demand, tuple(out), next(v for v in out if v.chosen))



class NoCapacityError(DataflowError):
    """No cluster can run the pipeline now; the message gives every cluster's reason."""

    exit_code = 2

    def __init__(self, placement: Placement):
        self.placement = placement
        super().__init__(f"no cluster can run '{placement.demand.pipeline}' now\n{placement.explain()}\n"
                         "(--wait waits for capacity; --cluster NAME asks for one cluster)")
