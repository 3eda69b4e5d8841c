"""Framework overhead of a dataflow Ray run, on a local multi-node Ray, and a model for 100 nodes.

Small JSON-lines files (``--files`` of ``--rows`` rows) -> filter + a computed column -> Parquet,
run by three contenders in fresh processes joined to the same Ray cluster (Ray start is not
timed; the timed part starts after ``ray.init``):

- ``stream``: ``dataflow run`` as it is by default (one streaming Dataset over every shard);
- ``per-shard``: ``dataflow run --no-stream-shards`` (one Dataset per shard, two at once);
- ``ray-data``: a hand-written Ray Data script (``read_json`` -> ``map_batches`` -> ``write_parquet``),
  the pure work.

Overhead = (dataflow wall - Ray Data wall) / dataflow wall. Per-shard figures: the time from the
start of execution to the first shard's commit (and from the run's start, which also holds what the
run does before execution: Ray Data's import, listing, the warm-up it waits for), and the median and
mean gaps between later commits (a task that ends two shards gives a zero gap). The
cluster is a head plus ``--nodes`` - 1 workers, each ``ray start --num-cpus=1`` on 127.0.0.1 with
its own ports (worker ports: a free range, so two runs side by side do not clash), all under one
``--temp-dir``; every Ray it starts is stopped at the end. Rounds
alternate the contenders; medians (min-max) are printed, then the model: on ``N`` nodes of ``C``
CPUs, work per file ``w`` (measured, per CPU), dataflow's driver costs per shard ``s`` (staging
and marker) and per file ``d`` (listing, fingerprint: a second, warm listing), its task-side cost per file ``o``, shards
sized as ``runtime.shards.shard_size`` does (256 files per CPU), commits overlapping the stream:

    overhead(N) = (fixed + d F + s + max(0, S s - W) + o F / (C N)) / (W + that),  W = w F / (C N)

``--page-delay S`` makes each listing page (``DATAFLOW_LISTING_PAGE`` files) take ``S`` seconds,
as a remote listing's requests do: the runner then holds its first shards back, beside the
listing, until Ray's workers are warm (``DATAFLOW_RAY_WARM_WORKERS=0`` to compare without).

``--warm`` times each contender's second run in its process, without the first run's imports
and Ray Data warm-up (issue 18 point 1's part).

Usage: python benchmarks/overhead.py [--files 2000] [--rows 20] [--rounds 3] [--nodes 1 2 3 4]
       [--files-per-shard N] [--warm] [--page-delay S] [--model-files 100000000] [--json OUT.json] [--replay JSON]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
KINDS = ("stream", "per-shard", "ray-data")
# One per benchmark run (runs side by side each have their own): the end kills what runs under it.
TEMP = os.environ.get("DATAFLOW_OVERHEAD_TEMP", f"/tmp/dataflow-overhead-ray-{os.getpid()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORKER_PORTS = 1000  # worker ports a node may use
_PORT_BASES = range(20000, 30000, WORKER_PORTS)  # below Linux's ephemeral ports (32768-), above Ray's default worker ports (10002-19999)
_PORT_LOCKS = pathlib.Path(tempfile.gettempdir()) / "dataflow-overhead-worker-ports"
_held: list = []  # the lock files of this run's worker-port ranges, open (so held) until the process ends


def _free_worker_ports() -> int:
    """The first port of a range of ``WORKER_PORTS`` free ports on 127.0.0.1, held by this run.

    A range is taken only when this process gets its lock file (another benchmark run side by side
    holds its own ranges' locks, even before its workers bind a port) and every port of it binds
    (no other Ray uses it). Bases are tried in a random order.
    """
    import fcntl

    _PORT_LOCKS.mkdir(exist_ok=True)
    for base in random.sample(list(_PORT_BASES), len(_PORT_BASES)):
        lock = open(_PORT_LOCKS / str(base), "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another run (or a node of this one) holds it
            lock.close()
            continue
        socks = []
        try:
            for port in range(base, base + WORKER_PORTS):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            lock.close()
            continue
        finally:
            for sock in socks:
                sock.close()
        _held.append(lock)
        return base
    raise RuntimeError(f"no free range of {WORKER_PORTS} worker ports on 127.0.0.1 in {_PORT_BASES.start}-{_PORT_BASES.stop - 1}")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


# `ray start` for a worker: Ray turns a loopback head address into the machine's interface address
# (services.resolve_ip_for_localhost) when multi-node is on; here the head is on loopback, so keep it.
_START = ("import sys, ray._private.services as s; s.resolve_ip_for_localhost = lambda host: host; "
          "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()")


def start_node(head: str | None, log: pathlib.Path) -> tuple[subprocess.Popen, str]:
    """``ray start --block`` (head when ``head`` is None) on 127.0.0.1, 1 CPU, distinct ports; wait until it runs."""
    port = _free_port() if head is None else None
    lo = _free_worker_ports()
    ports = [f"--{n}-port={_free_port()}" for n in ("node-manager", "object-manager", "metrics-export", "runtime-env-agent", "dashboard-agent-grpc", "dashboard-agent-listen")]
    cmd = [sys.executable, "-c", _START, "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", f"--memory={1 << 30}",
           f"--object-store-memory={256 << 20}", f"--min-worker-port={lo}", f"--max-worker-port={lo + WORKER_PORTS - 1}", "--disable-usage-stats", *ports]
    cmd += ["--head", f"--port={port}", f"--temp-dir={TEMP}", "--include-dashboard=false", f"--ray-client-server-port={_free_port()}"] if head is None else [f"--address={head}"]
    out = open(log, "wb")
    # The head binds to loopback with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (with 1 it takes the machine's
    # interface); a worker joins only with 1, and --node-ip-address keeps it on loopback.
    env = {**_env(), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0" if head is None else "1"}
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    deadline = time.monotonic() + 120
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_nodes([proc])
            raise RuntimeError(f"ray start failed: {log.read_text(errors='replace')[-1500:]}")
        time.sleep(0.2)
    return proc, head or f"127.0.0.1:{port}"


def stop_nodes(procs: list[subprocess.Popen]) -> None:
    """End each node's process group (workers first), then whatever still runs under the temp dir."""
    for proc in reversed(procs):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                continue
    current = pathlib.Path("/tmp/ray/ray_current_cluster")  # `ray start --head` records itself there: not left behind
    if current.exists() and any(p.args and f"--port={current.read_text().strip().rsplit(':', 1)[-1]}" in p.args for p in procs):
        current.unlink(missing_ok=True)
    left = subprocess.run(["pgrep", "-f", f"{TEMP}(/|[[:space:]]|$)"], capture_output=True, text=True).stdout.split()  # not a run whose folder only starts so
    for pid in left:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def write_files(folder: pathlib.Path, files: int, rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines = (json.dumps({"n": f * rows + i, "text": f"row {f * rows + i} " + "x" * 40}) for i in range(rows))
        (folder / f"f{f:06d}.jsonl").write_text("\n".join(lines) + "\n")


def child(kind: str, src: str, out: str, files_per_shard: int | None, warm: bool = False) -> dict:
    """One contender in this process, joined to ``RAY_ADDRESS``: its wall time (after ray.init) and shard commit times.

    ``warm``: run it once untimed first (imports, Ray Data's first execution and the job's
    workers are then warm: what a second run in a notebook or a warm driver sees).
    """
    import ray

    ray.init(address=os.environ["RAY_ADDRESS"], _node_ip_address="127.0.0.1", logging_level="ERROR", log_to_driver=False)
    if warm:
        _once(kind, src, out + "-warmup", files_per_shard)
    return _once(kind, src, out, files_per_shard)


def _once(kind: str, src: str, out: str, files_per_shard: int | None) -> dict:
    import ray
    if kind == "ray-data":
        import pyarrow.compute as pc

        ray.data.DataContext.get_current().enable_progress_bars = False
        paths = sorted(str(p) for p in pathlib.Path(src).iterdir())
        start = time.monotonic()

        def work(t):
            t = t.filter(pc.greater_equal(t["n"], 5))
            return t.append_column("m", pc.multiply(t["n"], 2))

        ray.data.read_json(paths).map_batches(work, batch_format="pyarrow").write_parquet(out)
        return {"wall": time.monotonic() - start, "cpus": ray.cluster_resources().get("CPU")}
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.base import Engine, RunOptions
    from dataflow.engines.ray.engine import RayEngine
    from dataflow.runner import run_pipeline
    from dataflow.runtime.progress import Progress

    if kind == "per-shard":
        RayEngine.execute_shards = Engine.execute_shards
    if os.environ.get("DATAFLOW_OVERHEAD_PAGE_DELAY"):  # --page-delay: a remote listing's pace, one request per page
        import connectors.listing

        list_pages, delay = connectors.listing.list_pages, float(os.environ["DATAFLOW_OVERHEAD_PAGE_DELAY"])

        def slow_pages(*args, **kwargs):
            for page in list_pages(*args, **kwargs):
                time.sleep(delay)
                yield page

        connectors.listing.list_pages = slow_pages
    marks, spans, stage = [], [], Progress.stage
    run_shards = RayEngine.execute_shards

    def timed_stage(self, *args, **kwargs):
        t = time.monotonic()
        marker = stage(self, *args, **kwargs)
        marks.append(time.monotonic())
        spans.append(marks[-1] - t)
        return marker

    starts = set()  # execute_shards is called once per wave; its start and end marks are not commits

    def timed_shards(self, *args, **kwargs):
        marks.append(time.monotonic())
        starts.add(marks[-1])
        try:
            run_shards(self, *args, **kwargs)
        finally:
            marks.append(time.monotonic())
            starts.add(marks[-1])

    durations = []  # per-shard path: each shard's own Dataset, start to end
    execute = RayEngine.execute

    def timed_execute(self, *args, **kwargs):
        t = time.monotonic()
        try:
            return execute(self, *args, **kwargs)
        finally:
            durations.append((t, time.monotonic() - t))

    Progress.stage, RayEngine.execute_shards, RayEngine.execute = timed_stage, timed_shards, timed_execute
    options = {"files_per_shard": files_per_shard} if files_per_shard else {}
    spec = parse_pipeline({"name": "overhead", "engine": "ray", "source": {"uri": src, "format": "jsonl", "options": options},
                           "steps": [{"op": "table.filter_rows", "params": {"where": "n >= 5"}}, {"op": "table.with_columns", "params": {"columns": {"m": "n * 2"}}}],
                           "sink": {"uri": out, "format": "parquet"}})
    from dataflow.engines.ray import session

    start, warmed = time.monotonic(), []
    engine_start = RayEngine.start

    def timed_start(self, options, job=None):  # when the warm-up (session.warm_workers) ends, from the run's start
        engine_start(self, options, job)
        if not warmed:
            warmed.append(None)
            event = session.warmed()
            threading.Thread(target=lambda: event.wait() and warmed.__setitem__(0, time.monotonic() - start), daemon=True).start()

    RayEngine.start = timed_start
    report = run_pipeline(spec, RunOptions(progress=False, stream_shards=kind == "stream"))
    wall = time.monotonic() - start
    begin, commits, end = marks[0], [m for m in marks if m not in starts], marks[-1]
    from dataflow.runtime.shards import ShardCutter, ShardFeed

    t = time.monotonic()
    cutter = ShardCutter(256)
    for _ in ShardFeed.of_source(spec.source, {}).waves(cutter):  # again, warm: the per-file part of the listing and cutting, without its first imports
        pass
    warm = time.monotonic() - t
    durations.sort()
    return {"wall": wall, "rows": report.rows_out, "shards": len(commits), "cpus": ray.cluster_resources().get("CPU"),
            "first": commits[0] - begin, "later": [b - a for a, b in zip(commits, commits[1:])], "stage_s": spans,
            "shard_s": [d for _, d in durations], "outside_stream": wall - (end - begin), "listing_warm": warm, "warm_s": warmed[0] if warmed else None, "begin_s": begin - start}


def _run_child(kind: str, address: str, src: pathlib.Path, out: pathlib.Path, files_per_shard: int | None, warm: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--src", str(src), "--out", str(out)] + (["--files-per-shard", str(files_per_shard)] if files_per_shard else [])
    cmd += ["--warm"] if warm else []
    proc = subprocess.run(cmd, env={**_env(), "RAY_ADDRESS": address}, capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"{kind} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(values: list[float]) -> str:
    """Median (min-max), or '-' where no run had the figure (a run of one shard has no later one)."""
    if not values:
        return "     -"
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def model(results: dict, files: int, model_files: int, cpus_per_node: int = 16) -> list[str]:
    """The overhead model fitted on the largest measured cluster, extrapolated to 1-100 nodes (listing in line; see overhead_model.py for it overlapped)."""
    from dataflow.runtime.shards import shard_size

    nodes = max(results)
    runs = results[nodes]
    cpus = statistics.median(r["cpus"] for r in runs["stream"])
    ray_wall = statistics.median(r["wall"] for r in runs["ray-data"])
    w = ray_wall * cpus / files  # CPU-seconds of pure work per file
    s = statistics.median(x for r in runs["stream"] for x in r["stage_s"])  # driver seconds per shard commit
    d = statistics.median(r["listing_warm"] for r in runs["stream"]) / files  # driver seconds per input file: listing, fingerprint
    fixed = statistics.median(r["outside_stream"] - d * files for r in runs["stream"])  # plan, imports (the listing's too), final commit, report
    in_stream = statistics.median(r["wall"] - r["outside_stream"] for r in runs["stream"])
    o = max(0.0, in_stream - ray_wall) * cpus / files  # task-side seconds per file (counters, routing), parallel
    lines = [f"model (fit at {nodes} node(s), {cpus:.0f} CPUs): work w={w * 1e3:.2f} ms/file/CPU, task-side o={o * 1e3:.2f} ms/file/CPU, "
             f"driver s={s * 1e3:.1f} ms/shard, d={d * 1e6:.1f} us/file, fixed={fixed:.1f} s",
             f"  {model_files:,} files, {cpus_per_node} CPUs/node: nodes  shards  work(s)  per-shard(s)  other(s)  per-shard%  overhead%"]
    for n in (1, 2, 4, 10, 25, 50, 100):
        c = n * cpus_per_node
        shards = -(-model_files // shard_size(c))
        work = w * model_files / c
        commits = s + max(0.0, shards * s - work)  # the last commit, plus any the stream could not hide
        over = commits + fixed + d * model_files + o * model_files / c
        lines.append(f"  {'':>40}{n:5d} {shards:7d} {work:8.0f} {commits:13.2f} {over - commits:9.0f} {100 * commits / (work + over):10.4f}% {100 * over / (work + over):9.2f}%")
    return lines


def replay(path: str, files: int, model_files: int) -> None:
    """Print the tables and the model again from a ``--json`` file."""
    results = {int(n): runs for n, runs in json.loads(pathlib.Path(path).read_text()).items()}
    for n, runs in sorted(results.items()):
        _print(n, runs, list(runs))
    print("\n".join(model(results, files, model_files)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--files-per-shard", type=int, default=None)
    parser.add_argument("--warm", action="store_true", help="time each contender's second run in its process (after an untimed one)")
    parser.add_argument("--page-delay", type=float, default=None, help="seconds each listing page takes (DATAFLOW_LISTING_PAGE files): a remote listing's pace")
    parser.add_argument("--model-files", type=int, default=100_000_000)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--json", default=None)
    parser.add_argument("--replay", default=None, help="print the figures of an earlier --json file")
    parser.add_argument("--child", choices=KINDS)
    parser.add_argument("--src")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.src, args.out, args.files_per_shard, args.warm)))
        return
    if args.replay:
        replay(args.replay, args.files, args.model_files)
        return
    if args.page_delay:
        os.environ["DATAFLOW_OVERHEAD_PAGE_DELAY"] = str(args.page_delay)
    work = pathlib.Path(tempfile.mkdtemp(prefix="dataflow-overhead-"))
    write_files(work / "in", args.files, args.rows)
    results: dict[int, dict[str, list[dict]]] = {}
    procs: list[subprocess.Popen] = []
    try:
        head = None
        for n in sorted(args.nodes):
            while len(procs) < n:
                proc, address = start_node(head, work / f"node-{len(procs)}.log")
                procs.append(proc)
                head = head or address
            results[n] = {k: [] for k in args.kinds}
            for r in range(args.rounds):
                order = args.kinds[r % len(args.kinds):] + args.kinds[: r % len(args.kinds)]
                for kind in order:
                    results[n][kind].append(_run_child(kind, head, work / "in", work / f"out-{n}-{kind}-{r}", args.files_per_shard, args.warm))
            _print(n, results[n], args.kinds)
    finally:
        stop_nodes(procs)
    if "stream" in args.kinds and "ray-data" in args.kinds:
        print("\n".join(model(results, args.files, args.model_files)))
    print(f"load average: {os.getloadavg()}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


def _print(n: int, runs: dict[str, list[dict]], kinds: list[str]) -> None:
    base = statistics.median(r["wall"] for r in runs["ray-data"]) if "ray-data" in runs else None
    print(f"== {n} node(s), {runs[kinds[0]][0]['cpus']:.0f} CPUs, load {os.getloadavg()[0]:.1f}")
    for kind in kinds:
        walls = [r["wall"] for r in runs[kind]]
        line = f"  {kind:9s} wall {_fmt(walls)} s"
        if kind != "ray-data" and base:
            line += f"  overhead {_fmt([100 * (w - base) / w for w in walls])} %"
            firsts = [r["first"] for r in runs[kind]]
            later = [statistics.median(r["later"]) for r in runs[kind] if r["later"]]
            line += f"  shards {runs[kind][0]['shards']}, first shard {_fmt(firsts)} s, later (median gap) {_fmt(later)} s"
            # A task may complete two shards at once (a zero gap): the mean gap is a later shard's cost too; the first
            # shard from the run's start also counts what the run did before execution began (imports, listing, warm-up).
            means = [sum(r["later"]) / len(r["later"]) for r in runs[kind] if r["later"]]
            line += (f"\n{'':12s}later (mean gap) {_fmt(means)} s, first shard from the run's start "
                     f"{_fmt([r['begin_s'] + r['first'] for r in runs[kind]])} s")
            if runs[kind][0].get("shard_s"):
                line += (f"\n{'':12s}shard duration (own Dataset): first {_fmt([r['shard_s'][0] for r in runs[kind]])} s, "
                         f"later (median) {_fmt([statistics.median(r['shard_s'][1:]) for r in runs[kind] if len(r['shard_s']) > 1])} s, "
                         f"first/later {_fmt([r['shard_s'][0] / statistics.median(r['shard_s'][1:]) for r in runs[kind] if len(r['shard_s']) > 1])}")
            line += f"\n{'':12s}driver staging per shard: first {_fmt([1e3 * r['stage_s'][0] for r in runs[kind]])} ms, later {_fmt([1e3 * statistics.median(r['stage_s'][1:]) for r in runs[kind] if len(r['stage_s']) > 1])} ms"
        print(line, flush=True)


if __name__ == "__main__":
    main()
