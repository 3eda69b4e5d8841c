"""Generate optical-module telemetry for pipelines/optical_module_faults.yaml, with known faulty links.

A fleet of switch ports reports DDM telemetry as JSON lines ``{ts, link, rx_power_dbm,
tx_power_dbm, temperature_c, crc_errors}`` once per interval, one file per switch, plus switch
syslog lines. A known set of links degrades in the last 6-hour window:

* ``rx_falling``: receive power falls steadily (about 0.3-0.6 dB per hour);
* ``crc_high``: CRC errors climb well above the threshold;
* ``flapping``: the port flaps (link down/up) several times in syslog.

Distractors that must *not* be flagged: a link with one deep single-sample dip (``glitch``), a
link that degraded earlier and recovered (``recovered``), and a hot but healthy module (``hot``).
A few rows are malformed (bad JSON, a non-numeric ``ts`` or ``rx_power_dbm``): they must land in
the sink's ``_errors/``. ``expected.json`` lists the degrading links.

Usage:
    python examples/optical_faults.py --out ./optical_data [--links 200 --hours 24] [--run]
    OPTICAL_DATA=./optical_data dataflow run pipelines/optical_module_faults.yaml
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import random
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
START_TS = 1767225600  # 2026-01-01T00:00:00Z, a multiple of the 6-hour window
WINDOW_S = 6 * 3600
PORTS_PER_SWITCH = 48
FAULTS = ("rx_falling", "crc_high", "flapping")
DISTRACTORS = ("glitch", "recovered", "hot")


def link_name(index: int) -> str:
    """The link id of port ``index``: ``sw<switch>:Eth1/<port>``."""
    return f"sw{index // PORTS_PER_SWITCH:02d}:Eth1/{index % PORTS_PER_SWITCH + 1}"


def _kinds(links: int, rng: random.Random) -> dict[int, str]:
    """Pick which links get a fault or a distractor: about 2% each fault, 1% each distractor (at least 2/1)."""
    per_fault = max(2, links // 50)
    per_distractor = max(1, links // 100)
    chosen = rng.sample(range(links), per_fault * len(FAULTS) + per_distractor * len(DISTRACTORS))
    kinds, i = {}, 0
    for kind, count in [(k, per_fault) for k in FAULTS] + [(k, per_distractor) for k in DISTRACTORS]:
        for index in chosen[i : i + count]:
            kinds[index] = kind
        i += count
    return kinds


def _sample(kind: str | None, t: int, end: int, rng: random.Random, base_rx: float) -> tuple[float, float, float, int]:
    """(rx dBm, tx dBm, temperature C, crc errors) of one link at time ``t``."""
    hours_left = (end - t) / 3600.0
    in_last = hours_left <= 6.0
    rx = base_rx + rng.gauss(0.0, 0.05)
    temp = 38.0 + 3.0 * math.sin(t / 7200.0) + rng.gauss(0.0, 0.3)
    crc = 1 if rng.random() < 0.01 else 0
    if kind == "rx_falling" and in_last:
        rx -= (6.0 - hours_left) * (0.3 + 0.3 * (base_rx % 1))
    elif kind == "crc_high" and in_last:
        crc += rng.randint(2, 8)
    elif kind == "recovered" and end - t >= 18 * 3600:
        rx -= (24.0 - hours_left) * 0.5  # fell in the first window, then the module was replaced
    elif kind == "hot":
        temp += 25.0
    return rx, 1.5 + rng.gauss(0.0, 0.05), temp, crc


def _malformed(t: int, link: str, rng: random.Random) -> str:
    return rng.choice([
        '{"ts": %d, "link": "%s", "rx_power_dbm": ' % (t, link),  # truncated line
        '{"ts": "n/a", "link": "%s", "rx_power_dbm": -3.1, "tx_power_dbm": 1.5, "temperature_c": 40.0, "crc_errors": 0}' % link,
        '{"ts": %d, "link": "%s", "rx_power_dbm": "low", "tx_power_dbm": 1.5, "temperature_c": 40.0, "crc_errors": 0}' % (t, link),
        "ddm poll failed: timeout",
    ])


def _syslog(kind: str | None, switch: str, port: str, end: int, rng: random.Random) -> list[tuple[int, str]]:
    """Syslog events of one port: flaps for ``flapping``, module and CRC alarms for faulty links."""
    out: list[tuple[int, str]] = []
    if kind == "flapping":
        for _ in range(5):
            t = end - rng.randint(60, WINDOW_S)
            out.append((t, f"{switch} %ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface {port} is down (Link failure)"))
            out.append((t + 3, f"{switch} %ETHPORT-5-IF_UP: Interface {port} is up in mode access"))
    if kind in ("crc_high", "rx_falling"):
        out.append((end - rng.randint(60, WINDOW_S), f"{switch} %ETHPORT-3-CRC_ALARM: Interface {port} CRC errors above threshold"))
    if kind in ("recovered", "glitch") or rng.random() < 0.02:
        t = end - rng.randint(WINDOW_S, 4 * WINDOW_S)
        out.append((t, f"{switch} %PLATFORM-4-OpticalRemoveActivate: transceiver on {port} removed and re-inserted"))
    return out


def generate(out: pathlib.Path, *, links: int = 200, hours: int = 24, interval_s: int = 60, seed: int = 7,
             malformed: float = 0.0005, syslog: bool = True) -> dict:
    """Write ``telemetry/<switch>.jsonl``, ``syslog/<switch>.log`` and ``expected.json`` under ``out``.

    Returns:
        What was written: rows, malformed rows, and the degrading links with their fault.
    """
    rng = random.Random(seed)
    kinds = _kinds(links, rng)
    end = START_TS + hours * 3600
    times = range(START_TS, end, interval_s)
    (out / "telemetry").mkdir(parents=True, exist_ok=True)
    (out / "syslog").mkdir(parents=True, exist_ok=True)
    rows = bad = 0
    for switch_start in range(0, links, PORTS_PER_SWITCH):
        switch = f"sw{switch_start // PORTS_PER_SWITCH:02d}"
        lines: list[str] = []
        events: list[tuple[int, str]] = []
        for index in range(switch_start, min(links, switch_start + PORTS_PER_SWITCH)):
            link, kind = link_name(index), kinds.get(index)
            base = -2.5 - rng.random() * 2.0
            glitch_at = end - interval_s * rng.randint(5, 300) if kind == "glitch" else None
            for t in times:
                if rng.random() < malformed:
                    lines.append(_malformed(t, link, rng))
                    bad += 1
                    continue
                rx, tx, temp, crc = _sample(kind, t, end, rng, base)
                if t == glitch_at:
                    rx = -12.0
                lines.append(f'{{"ts": {t}, "link": "{link}", "rx_power_dbm": {rx:.3f}, "tx_power_dbm": {tx:.3f}, '
                             f'"temperature_c": {temp:.2f}, "crc_errors": {crc}}}')
                rows += 1
            if syslog:
                events += _syslog(kind, switch, link.split(":")[1], end, rng)
        (out / "telemetry" / f"{switch}.jsonl").write_text("\n".join(lines) + "\n")
        if syslog:
            noise = [(START_TS + rng.randint(0, hours * 3600), f"{switch} %AUTHPRIV-6-SYSTEM_MSG: pam_unix(sshd:session): session opened for user admin")
                     for _ in range(5)]
            text = "".join(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))} {msg}\n" for t, msg in sorted(events + noise))
            (out / "syslog" / f"{switch}.log").write_text(text)
    expected = {
        "rows": rows,
        "malformed": bad,
        "degrading": {link_name(i): k for i, k in sorted(kinds.items()) if k in FAULTS and (syslog or k != "flapping")},
        "distractors": {link_name(i): k for i, k in sorted(kinds.items()) if k in DISTRACTORS},
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=2))
    return expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OPTICAL_DATA", "./optical_data"), help="output folder (default $OPTICAL_DATA or ./optical_data)")
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--interval", type=int, default=60, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-syslog", action="store_true", help="write no syslog lines (and expect no flapping faults)")
    parser.add_argument("--run", action="store_true", help="then run pipelines/optical_module_faults.yaml on the data")
    args = parser.parse_args()
    out = pathlib.Path(args.out).resolve()
    start = time.monotonic()
    info = generate(out, links=args.links, hours=args.hours, interval_s=args.interval, seed=args.seed, syslog=not args.no_syslog)
    print(f"wrote {info['rows']:,} telemetry rows ({info['malformed']} malformed) for {args.links} links in {time.monotonic() - start:.1f} s: {out}")
    print(f"degrading links ({len(info['degrading'])}): {', '.join(f'{k} ({v})' for k, v in info['degrading'].items())}")
    if not args.run:
        return 0
    env = {**os.environ, "OPTICAL_DATA": str(out)}
    return subprocess.call([sys.executable, "-m", "dataflow", "run", str(ROOT / "pipelines" / "optical_module_faults.yaml")], env=env)


if __name__ == "__main__":
    sys.exit(main())
