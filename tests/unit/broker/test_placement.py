"""Placement: lendable share, windows, reserves, GPU models, ranking, reasons; the demand of a compiled plan."""
from __future__ import annotations

import datetime as dt

from dataflow.broker.capacity import Amount, Capacity, NodeCapacity
from dataflow.broker.clusters import Fleet, KubernetesCluster, RayCluster, WatchSettings
from dataflow.broker.placement import Demand, NoCapacityError, StageDemand, demand_of, gpu_type_matches, lendable, place

NOON = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)
CPU_DEMAND = Demand("p", (StageDemand("stage-1", "image.decode", 1.0, 0.0, None),))
GPU_DEMAND = Demand("p", (StageDemand("stage-1", "image.decode", 1.0, 0.0, None), StageDemand("stage-2", "embed", 0.5, 1.0, 2, "A100")))


def _ray(name, **kw):
    return RayCluster(name=name, kind="ray", address=f"http://{name}:8265", **kw)


def _cap(name, total_cpus, idle_cpus, nodes=None, **kw):
    nodes = nodes or (NodeCapacity("n1", Amount(total_cpus), Amount(idle_cpus)),)
    total = idle = Amount()
    for n in nodes:
        total, idle = total.plus(n.total), idle.plus(n.idle)
    return Capacity(name, kw.pop("kind", "ray"), total=total, idle=idle, nodes=tuple(nodes), **kw)


def _fleet(*clusters):
    return Fleet(tuple(clusters), WatchSettings())


def test_lendable_is_idle_above_the_reserve_within_the_share():
    cluster = _ray("a", reserve={"num_cpus": 8}, max_share=0.5)
    assert lendable(cluster, _cap("a", 64, 40)) == Amount(32.0, 0.0, 0.0)  # max_share binds
    assert lendable(cluster, _cap("a", 64, 20)) == Amount(12.0, 0.0, 0.0)  # the reserve binds
    assert lendable(cluster, _cap("a", 64, 4)) == Amount(0.0, 0.0, 0.0)  # never negative


def test_highest_priority_wins_then_most_idle():
    fleet = _fleet(_ray("a", priority=1), _ray("b", priority=5), _ray("c", priority=5))
    caps = {"a": _cap("a", 64, 64), "b": _cap("b", 8, 2), "c": _cap("c", 8, 6)}
    placement = place(fleet, caps, CPU_DEMAND, now=NOON)
    assert placement.chosen.cluster == "c" and placement.chosen.lend.cpus == 6
    text = placement.explain()
    assert "c  chosen" in text and "chosen: priority 5, most idle" in text
    assert "b  fits" in text and "not chosen: c ranks first" in text


def test_each_cluster_that_cannot_run_says_why():
    fleet = _fleet(
        _ray("closed", windows=["22:00-08:00"], timezone="UTC"),
        _ray("busy", reserve={"num_cpus": 2}),
        _ray("down"),
        _ray("small-nodes"),
    )
    small = (NodeCapacity("n1", Amount(1), Amount(0.5)), NodeCapacity("n2", Amount(1), Amount(0.5)))
    caps = {"closed": _cap("closed", 8, 8), "busy": _cap("busy", 4, 2.5), "down": Capacity("down", "ray", error="unreachable at http://down:8265: refused"),
            "small-nodes": _cap("small-nodes", 2, 1, nodes=small)}
    placement = place(fleet, caps, CPU_DEMAND, now=NOON)
    assert placement.chosen is None
    reasons = {v.cluster: v.reasons[0] for v in placement.verdicts}
    assert reasons["closed"] == "window closed (22:00-08:00 UTC; now 12:00:00)"
    assert reasons["busy"].startswith("needs 1 CPU for one worker, lends 0.5 (idle 2.5 CPU of 4 CPU; reserve 2 CPU 0 GPU")
    assert reasons["down"] == "unreachable at http://down:8265: refused"
    assert reasons["small-nodes"].startswith("no node has 1 idle CPU for one worker")
    err = NoCapacityError(placement)
    assert err.exit_code == 2 and "no cluster can run 'p' now" in str(err) and "--wait" in str(err)


def test_gpu_stages_count_only_gpus_of_the_asked_model():
    nodes = (NodeCapacity("l4", Amount(32, 4), Amount(30, 4), "nvidia-l4"), NodeCapacity("a100", Amount(32, 8), Amount(16, 1), "NVIDIA-A100-SXM4-80GB"))
    fleet = _fleet(_ray("g"))
    caps = {"g": _cap("g", 0, 0, nodes=nodes)}
    placement = place(fleet, caps, GPU_DEMAND, now=NOON)
    assert placement.chosen.cluster == "g" and placement.chosen.lend.gpus == 1  # the 4 idle L4s do not count
    l4_only = {"g": _cap("g", 0, 0, nodes=nodes[:1])}
    verdict = place(fleet, l4_only, GPU_DEMAND, now=NOON).verdicts[0]
    assert not verdict.fits and verdict.reasons[0].startswith("needs 1 A100 GPU for one worker, lends 0 (has nvidia-l4: 4 idle of 4")


def test_gpu_model_matching_is_by_tokens():
    assert gpu_type_matches("A100", "NVIDIA-A100-SXM4-80GB") and gpu_type_matches("a100", "nvidia-tesla-a100")
    assert gpu_type_matches("A100-80GB", "NVIDIA-A100-SXM4-80GB") and not gpu_type_matches("A10", "NVIDIA-A100-SXM4-80GB")
    assert not gpu_type_matches("H100", None)


def test_asked_cluster_cooldown_and_kubernetes_are_honoured():
    k8s = KubernetesCluster(name="k", kind="kubernetes", namespace="data", priority=99)
    fleet = _fleet(_ray("a", priority=10), _ray("b"), k8s)
    caps = {"a": _cap("a", 8, 8), "b": _cap("b", 8, 8), "k": _cap("k", 100, 100, kind="kubernetes")}
    assert place(fleet, caps, CPU_DEMAND, now=NOON).chosen.cluster == "a"  # k fits but dataflow run does not submit there
    k_verdict = next(v for v in place(fleet, caps, CPU_DEMAND, now=NOON).verdicts if v.cluster == "k")
    assert k_verdict.fits and not k_verdict.runnable and "dataflow k8s submit" in k_verdict.reasons[1]
    assert place(fleet, caps, CPU_DEMAND, only="b", now=NOON).chosen.cluster == "b"
    cooled = place(fleet, caps, CPU_DEMAND, now=NOON, cooldown={"a": "given back at 12:00 (window closed)"})
    assert cooled.chosen.cluster == "b" and next(v for v in cooled.verdicts if v.cluster == "a").reasons == ("given back at 12:00 (window closed)",)


def test_volcano_queue_limits_and_closes():
    k8s = KubernetesCluster(name="k", kind="kubernetes", namespace="data", queue="q")
    fleet = _fleet(k8s)
    open_queue = _cap("k", 100, 100, kind="kubernetes", queue={"name": "q", "state": "Open"}, limit=Amount(4, float("inf"), float("inf")))
    assert lendable(k8s, open_queue).cpus == 4
    closed = _cap("k", 100, 100, kind="kubernetes", queue={"name": "q", "state": "Closed"})
    assert place(fleet, {"k": closed}, CPU_DEMAND, now=NOON).verdicts[0].reasons == ("Volcano queue 'q' is Closed (expected Open)",)


def test_demand_of_a_compiled_pipeline(tmp_path):
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.registry import compile_pipeline

    spec = parse_pipeline({
        "name": "p", "source": {"uri": str(tmp_path), "format": "image"},
        "steps": [{"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 64}, "resources": {"num_gpus": 1, "concurrency": 2}}],
        "sink": {"uri": str(tmp_path / "out")},
    })
    *_, job = compile_pipeline(spec)
    demand = demand_of("p", job.stages, gpu_type="A100")
    assert demand.worker == Amount(1.0, 1.0) and demand.gpu_type == "A100"
    assert [(s.label, s.num_gpus, s.concurrency) for s in demand.stages][-1] == ("image.resize", 1.0, 2)
    assert demand.wanted.gpus == 2.0
