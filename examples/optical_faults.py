"""Generate labelled optical-module telemetry for pipelines/optical_module_faults.yaml, and score a run.

A fleet of fibres, each from a leaf-switch port to a GPU host's NIC, reports DDM telemetry from both
ends as JSON lines ``{ts, link, peer, rx_power_dbm, tx_power_dbm, temperature_c, crc_errors, ...}``
(``link`` is ``<switch>:<port>`` or ``<host>:<nic>``; one file per device), and the switches write
syslog in their vendor's format (Huawei VRP, Cisco NX-OS or Arista EOS style, one file per switch).

Effects real telemetry has: DDM quantisation (0.01), sensor noise, temperature drift over the day
(and rx power with it), missing samples and collection gaps, per-device clock skew, CRC counters that
are cumulative and reset (cleared counters, module swaps), modules that report their own DDM
thresholds and modules that do not, malformed lines.

Faults, labelled on the end that shows them (``expected.json`` → ``labels``):

* ``rx_decay``: rx power falls steadily (≥ 1.8 dB inside the last 6 h);
* ``rx_drop``: rx power drops suddenly by 2.5-8 dB, 0.75-5 h before the end;
* ``crc_rising``: the CRC error rate ramps up to 3-60 errors a minute (counter resets included);
* ``flapping``: a switch port goes down and up 4-8 times within an hour, in the last 4 h (syslog);
* ``dirty_connector``: one end receives 0.5-2.5 dB below its warning threshold all day, its peer is fine.

Distractors that are not faults (``expected.json`` → ``distractors``): a module swap (removal and
insertion events, then a step in rx power and a counter reset), maintenance (admin down, no light,
admin up), a single flap, a flapping burst 8-20 h ago, isolated glitch samples, a counter cleared,
a hot but healthy module.

Usage:
    python examples/optical_faults.py --out ./optical_data [--fibres 200 --hours 24 --seed 7] [--run]
    OPTICAL_DATA=./optical_data dataflow run pipelines/optical_module_faults.yaml
    python examples/optical_faults.py --out ./optical_data --score ./out/optical_faults
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
START_TS = 1767225600  # 2026-01-01T00:00:00Z
FAULTS = ("rx_decay", "rx_drop", "crc_rising", "flapping", "dirty_connector")
DISTRACTORS = ("module_swap", "maintenance", "single_flap", "old_flapping", "glitch", "counter_cleared", "hot")
VENDORS = ("huawei_vrp", "cisco_nxos", "arista_eos")
PORTS_PER_SWITCH = 48
NICS_PER_HOST = 8
DEFAULT_RX_WARN, DEFAULT_RX_ALARM = -10.0, -13.0  # the pipeline's defaults for modules that report none


def port_name(vendor: str, port: int) -> str:
    """The port as the switch's syslog (and DDM) names it."""
    return {"huawei_vrp": f"100GE1/0/{port}", "cisco_nxos": f"Ethernet1/{port}", "arista_eos": f"Ethernet{port}/1"}[vendor]


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t)))


def syslog_line(vendor: str, t: float, switch: str, port: str, kind: str, seq: int) -> list[str]:
    """The vendor's syslog line(s) of one event: link_down, link_up, admin_down, admin_up, module_removed,
    module_inserted; an admin down also takes the line protocol down, as switches log it."""
    at = f"{_iso(t)} {switch}"
    if vendor == "huawei_vrp":
        state = f"{at} %%01IFNET/4/LINK_STATE(l)[{seq}]:The line protocol IP on the interface {port} has entered the {{}} state."
        cmd = f'{at} %%01SHELL/5/CMDRECORD(s)[{seq}]:Recorded command information. (Task=VT0, User=netops, Command="{{}}", Interface={port})'
        return {
            "link_down": [state.format("DOWN")], "link_up": [state.format("UP")],
            "admin_down": [cmd.format("shutdown"), state.format("DOWN")], "admin_up": [cmd.format("undo shutdown"), state.format("UP")],
            "module_removed": [f"{at} %%01DEVM/2/OpticalRemoveActivate(l)[{seq}]:Optical module has been removed. (EntityName={port})"],
            "module_inserted": [f"{at} %%01DEVM/2/OpticalRemoveResume(l)[{seq}]:Optical module has been inserted. (EntityName={port})"],
        }[kind]
    if vendor == "cisco_nxos":
        return [{
            "link_down": f"{at} %ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface {port} is down (Link failure)",
            "link_up": f"{at} %ETHPORT-5-IF_UP: Interface {port} is up in mode trunk",
            "admin_down": f"{at} %ETHPORT-5-IF_DOWN_ADMIN_DOWN: Interface {port} is down (Administratively down)",
            "admin_up": f"{at} %ETHPORT-5-IF_ADMIN_UP: Interface {port} is admin up",
            "module_removed": f"{at} %ETHPORT-5-IF_XCVR_REMOVED: Interface {port}, transceiver removed",
            "module_inserted": f"{at} %ETHPORT-5-IF_XCVR_INSERTED: Interface {port}, transceiver inserted",
        }[kind]]
    proto = f"{at} Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface {port}, changed state to {{}}"
    return {
        "link_down": [proto.format("down")], "link_up": [proto.format("up")],
        "admin_down": [f"{at} Ebra: %LINK-5-ADMIN_DOWN: Interface {port} administratively disabled", proto.format("down")],
        "admin_up": [f"{at} Ebra: %LINK-5-ADMIN_UP: Interface {port} administratively enabled", proto.format("up")],
        "module_removed": [f"{at} Xcvr: %XCVR-6-XCVR_REMOVED: Transceiver for Interface {port} removed"],
        "module_inserted": [f"{at} Xcvr: %XCVR-6-XCVR_INSERTED: Transceiver for Interface {port} inserted"],
    }[kind]


def _noise_lines(vendor: str, switch: str, rng: random.Random, start: int, end: int, port: str) -> list[tuple[float, str]]:
    """Lines the pipeline must skip: logins, NTP, a speed change on a port."""
    t = [start + rng.random() * (end - start) for _ in range(4)]
    return [
        (t[0], f"{_iso(t[0])} {switch} %AUTHPRIV-6-SYSTEM_MSG: pam_unix(sshd:session): session opened for user admin"),
        (t[1], f"{_iso(t[1])} {switch} ntpd[812]: clock step -0.004 s"),
        (t[2], f"{_iso(t[2])} {switch} %ETHPORT-5-SPEED: Interface {port}, operational speed changed to 100 Gbps"),
        (t[3], f"{_iso(t[3])} {switch} %%01SHELL/5/CMDRECORD(s)[1]:Recorded command information. (Task=VT0, User=netops, Command=\"display version\")"),
    ]


class _End:
    """One end of a fibre: its DDM series and its syslog events (true times, before clock skew)."""

    def __init__(self, link: str, peer: str, device: str, rng: random.Random):
        self.link, self.peer, self.device = link, peer, device
        self.base_rx = rng.uniform(-5.0, -1.0)
        self.base_tx = rng.uniform(-1.0, 2.0)
        self.base_temp = rng.uniform(32.0, 48.0)
        self.temp_amp = rng.uniform(2.0, 6.0)
        self.temp_phase = rng.uniform(0, 2 * np.pi)
        self.reports_thresholds = rng.random() < 0.5
        self.rx_warn = rng.choice([-10.0, -10.9, -11.9]) if self.reports_thresholds else DEFAULT_RX_WARN
        self.crc_base = rng.randint(0, 5_000_000)
        self.crc_lambda = rng.uniform(0.0, 0.02)  # background errors a minute
        self.events: list[tuple[float, str]] = []
        self.fault: str | None = None
        self.distractors: list[str] = []
        self.dark: list[tuple[float, float]] = []  # admin down: no light at either end


def _series(end: _End, t: np.ndarray, e_ts: int, rng: random.Random, nrng: np.random.Generator, interval_s: int):
    """(keep mask, rx, tx, temperature, crc counter) of one end at true times ``t``."""
    n = len(t)
    hours_left = (e_ts - t) / 3600.0
    temp = end.base_temp + end.temp_amp * np.sin(2 * np.pi * t / 86400.0 + end.temp_phase) + nrng.normal(0, 0.3, n)
    rx = end.base_rx - 0.015 * (temp - end.base_temp) + nrng.normal(0, 0.04, n)
    tx = end.base_tx - 0.01 * (temp - end.base_temp) + nrng.normal(0, 0.03, n)
    rate = np.full(n, end.crc_lambda)
    keep = nrng.random(n) >= 0.01  # missing samples
    if rng.random() < 0.06:  # a collection gap, never in the last 1.5 h
        gap_start = e_ts - rng.uniform(1.5, 20) * 3600
        keep &= ~((t >= gap_start) & (t < gap_start + rng.uniform(20, 90) * 60))
    resets: list[float] = []
    if end.fault == "rx_decay":
        duration = rng.uniform(2.5, 10.0)
        slope = max(rng.uniform(0.35, 1.0), 1.8 / min(duration, 6.0))
        rx -= np.clip(duration - hours_left, 0, None) * slope
    elif end.fault == "rx_drop":
        rx -= np.where(hours_left < rng.uniform(0.75, 5.0), rng.uniform(2.5, 8.0), 0.0)
    elif end.fault == "crc_rising":
        onset = rng.uniform(1.0, 4.0)
        rate += np.clip((onset - hours_left) / onset, 0, None) * rng.uniform(3.0, 60.0)
        if rng.random() < 0.4:
            resets.append(e_ts - rng.uniform(0.1, onset) * 3600)
    elif end.fault == "dirty_connector":
        rx += (end.rx_warn - rng.uniform(0.5, 2.5)) - end.base_rx
    for kind in end.distractors:
        if kind == "module_swap":
            at = e_ts - rng.uniform(0.1, 20) * 3600
            out = rng.uniform(20, 300)
            end.events += [(at, "module_removed"), (at + out, "module_inserted")]
            keep &= ~((t >= at) & (t < at + out + 60))
            step = rng.choice([-1, 1]) * rng.uniform(0.5, 2.5)
            step = max(step, end.rx_warn + 4.0 - end.base_rx)  # the new module stays healthy
            rx += np.where(t >= at, step, 0.0)
            tx += np.where(t >= at, rng.uniform(-1.0, 1.0), 0.0)
            resets.append(at + out)
        elif kind == "maintenance":
            at = e_ts - rng.uniform(0.2, 20) * 3600
            down = rng.uniform(5, 40) * 60
            end.events += [(at, "admin_down"), (at + down, "admin_up")]
            end.dark.append((at, at + down))
        elif kind == "glitch":
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(n)
                rx[i] = rng.uniform(-40.0, -15.0)
        elif kind == "counter_cleared":
            resets.append(e_ts - rng.uniform(0.1, 20) * 3600)
        elif kind == "hot":
            temp += 12.0
    for start, stop in end.dark:
        rx = np.where((t >= start) & (t < stop), -40.0, rx)
    crc = np.cumsum(nrng.poisson(rate * interval_s / 60.0)) + end.crc_base
    for at in sorted(resets):
        after = t >= at
        if after.any():
            crc = np.where(after, crc - crc[np.argmax(after)] + nrng.poisson(1), crc)
    for at, kind in end.events:
        if kind == "link_down":
            i = int(np.searchsorted(t, at))
            if i < n and rng.random() < 0.3:
                rx[i] = -40.0  # the poll landed while the link was down: no light
    return keep, rx, tx, temp, crc


def _flaps(rng: random.Random, e_ts: int, count: int, ends_hours_ago: float) -> list[tuple[float, str]]:
    last = e_ts - ends_hours_ago * 3600
    span = rng.uniform(20, 50) * 60
    out = []
    for k in range(count):
        at = last - span * (1 - k / max(count - 1, 1))
        out += [(at, "link_down"), (at + rng.uniform(2, 20), "link_up")]
    return out


def _assign(n_fibres: int, rng: random.Random) -> tuple[dict[tuple[int, int], str], dict[tuple[int, int], list[str]]]:
    """(fibre, end) -> fault, and -> distractors: about 3% of ends per fault, 4% per distractor."""
    ends = [(f, e) for f in range(n_fibres) for e in (0, 1)]
    per_fault = max(3, len(ends) * 3 // 100)
    faults: dict[tuple[int, int], str] = {}
    pool = ends[:]
    rng.shuffle(pool)
    for kind in FAULTS:
        for _ in range(per_fault):
            while True:
                f, e = pool.pop()
                if kind == "flapping":
                    e = 0  # flaps are seen in the switch's syslog
                if (f, 0) not in faults and (f, 1) not in faults:
                    faults[(f, e)] = kind
                    break
    distractors: dict[tuple[int, int], list[str]] = {}
    healthy = [x for x in ends if x[0] not in {f for f, _ in faults}]
    for kind in DISTRACTORS:
        for key in rng.sample(healthy, max(2, len(ends) * 4 // 100)):
            key = (key[0], 0) if kind in ("module_swap", "maintenance", "single_flap", "old_flapping") else key
            distractors.setdefault(key, []).append(kind)
    return faults, distractors


def generate(out: pathlib.Path, *, fibres: int = 200, hours: int = 24, interval_s: int = 60, seed: int = 7, malformed: float = 0.0005) -> dict:
    """Write ``telemetry/<device>.jsonl``, ``syslog/<switch>.log`` and ``expected.json`` under ``out``.

    Returns:
        What was written: rows, malformed rows, the fault of each faulty end (``labels``) and the
        distractors of healthy ends.
    """
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    e_ts = START_TS + hours * 3600
    grid = np.arange(START_TS, e_ts, interval_s, dtype=np.float64)
    (out / "telemetry").mkdir(parents=True, exist_ok=True)
    (out / "syslog").mkdir(parents=True, exist_ok=True)
    faults, distractors = _assign(fibres, rng)
    skew = {}
    telemetry: dict[str, list[str]] = {}
    syslog: dict[str, list[tuple[float, str]]] = {}
    labels, notes = {}, {}
    rows = bad = 0
    for f in range(fibres):
        s, vendor = f // PORTS_PER_SWITCH, VENDORS[(f // PORTS_PER_SWITCH) % len(VENDORS)]
        switch, host = f"leaf{s:03d}", f"gpu{f // NICS_PER_HOST:04d}"
        port = port_name(vendor, f % PORTS_PER_SWITCH + 1)
        names = (f"{switch}:{port}", f"{host}:eth{f % NICS_PER_HOST}")
        for e, (device, link, peer) in enumerate(((switch, names[0], names[1]), (host, names[1], names[0]))):
            end = _End(link, peer, device, rng)
            end.fault = faults.get((f, e))
            end.distractors = distractors.get((f, e), [])
            if end.fault == "flapping":
                end.events += _flaps(rng, e_ts, rng.randint(4, 8), rng.uniform(0.25, 4.0))
            if "single_flap" in end.distractors:
                end.events += _flaps(rng, e_ts, 1, rng.uniform(0.1, 20))
            if "old_flapping" in end.distractors:
                end.events += _flaps(rng, e_ts, rng.randint(4, 8), rng.uniform(8, 20))
            if e == 1:
                end.dark = switch_end.dark
            keep, rx, tx, temp, crc = _series(end, grid, e_ts, rng, nrng, interval_s)
            switch_end = end
            offset = skew.setdefault(device, rng.uniform(-90, 90))
            lines = telemetry.setdefault(device, [])
            extra = f', "rx_low_warn_dbm": {end.rx_warn}, "rx_low_alarm_dbm": {end.rx_warn - 3}, "temp_high_warn_c": 70.0' if end.reports_thresholds else ""
            for i in np.flatnonzero(keep):
                ts = int(grid[i] + offset)
                if rng.random() < malformed:
                    lines.append(rng.choice([f'{{"ts": {ts}, "link": "{link}", "rx_power_dbm": ', f'{{"ts": "n/a", "link": "{link}"}}', "ddm poll failed: timeout"]))
                    bad += 1
                    continue
                lines.append(f'{{"ts": {ts}, "link": "{link}", "peer": "{peer}", "rx_power_dbm": {rx[i]:.2f}, "tx_power_dbm": {tx[i]:.2f}, '
                             f'"temperature_c": {temp[i]:.2f}, "crc_errors": {int(crc[i])}{extra}}}')
                rows += 1
            if e == 0:
                log = syslog.setdefault(switch, [])
                for at, kind in end.events:
                    log += [(at + offset, line) for line in syslog_line(vendor, at + offset, switch, port, kind, len(log))]
                if f % PORTS_PER_SWITCH == 0:
                    log += _noise_lines(vendor, switch, rng, START_TS, e_ts, port)
            if end.fault:
                labels[link] = end.fault
            if end.distractors:
                notes[link] = end.distractors
    for device, lines in telemetry.items():
        (out / "telemetry" / f"{device}.jsonl").write_text("\n".join(lines) + "\n")
    for switch, log in syslog.items():
        (out / "syslog" / f"{switch}.log").write_text("".join(line + "\n" for _, line in sorted(log)))
    expected = {"rows": rows, "malformed": bad, "ends": 2 * fibres, "labels": dict(sorted(labels.items())), "distractors": dict(sorted(notes.items()))}
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def score(expected: dict, flagged: dict[str, str]) -> dict:
    """Confusion counts, precision and recall per fault type of ``flagged`` (link -> fault) against the labels."""
    classes = (*FAULTS, "healthy")
    ends = expected["ends"]
    truth = expected["labels"]
    matrix = {a: dict.fromkeys((*classes, "other"), 0) for a in classes}
    for link in set(truth) | set(flagged):
        got = flagged.get(link, "healthy")
        matrix[truth.get(link, "healthy")][got if got in classes else "other"] += 1
    matrix["healthy"]["healthy"] = ends - len(truth) - sum(v for k, v in matrix["healthy"].items() if k != "healthy")
    quality = {}
    for kind in FAULTS:
        tp = matrix[kind][kind]
        predicted = sum(matrix[a][kind] for a in classes)
        quality[kind] = {"precision": tp / predicted if predicted else 1.0, "recall": tp / sum(matrix[kind].values()), "support": sum(matrix[kind].values())}
    return {"matrix": matrix, "quality": quality}


def format_score(result: dict) -> str:
    """The confusion matrix (rows: truth, columns: flagged) and precision / recall per fault type."""
    cols = [*FAULTS, "healthy", "other"]
    width = max(map(len, cols)) + 1
    lines = ["truth \\ flagged".ljust(width) + "".join(c.rjust(width) for c in cols)]
    for truth, row in result["matrix"].items():
        lines.append(truth.ljust(width) + "".join(str(row[c]).rjust(width) for c in cols))
    lines.append("")
    for kind, q in result["quality"].items():
        lines.append(f"{kind.ljust(width)} precision {q['precision']:.3f}  recall {q['recall']:.3f}  ({q['support']} ends)")
    return "\n".join(lines)


def read_flags(out: pathlib.Path) -> dict[str, str]:
    """link -> fault of the ``degrading`` rows of a run's output folder."""
    import pyarrow.parquet as pq

    manifest = json.loads((out / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(out / f["path"]).to_pylist()]
    return {r["link"]: r["fault"] for r in rows if r["status"] == "degrading"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OPTICAL_DATA", "./optical_data"), help="data folder (default $OPTICAL_DATA or ./optical_data)")
    parser.add_argument("--fibres", type=int, default=200, help="fibres; each has two reporting ends")
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--interval", type=int, default=60, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--run", action="store_true", help="then run pipelines/optical_module_faults.yaml and score it")
    parser.add_argument("--score", metavar="OUTPUT", help="only score a run's output folder against the data's expected.json")
    args = parser.parse_args()
    data = pathlib.Path(args.out).resolve()
    if args.score:
        print(format_score(score(json.loads((data / "expected.json").read_text()), read_flags(pathlib.Path(args.score)))))
        return 0
    start = time.monotonic()
    info = generate(data, fibres=args.fibres, hours=args.hours, interval_s=args.interval, seed=args.seed)
    print(f"wrote {info['rows']:,} telemetry rows ({info['malformed']} malformed) for {info['ends']} ends in {time.monotonic() - start:.1f} s: {data}")
    if not args.run:
        return 0
    result = data.parent / (data.name + "_out")
    env = {**os.environ, "OPTICAL_DATA": str(data), "OPTICAL_OUT": str(result)}
    code = subprocess.call([sys.executable, "-m", "dataflow", "run", str(ROOT / "pipelines" / "optical_module_faults.yaml")], env=env)
    if code == 0:
        print(format_score(score(info, read_flags(result))))
    return code


if __name__ == "__main__":
    sys.exit(main())
