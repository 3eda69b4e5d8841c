"""Split clips into speech segments: energy-based by default, or Silero VAD."""
from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.lineage import TIME
from dataflow.ops.audio.energy import frame_db
from dataflow.ops.declare import Needs, op

__all__ = ["energy_regions", "segment_audio_vad", "shape_segments"]

_SILERO_RATE = 16000
_SILERO_HINT = "audio.segment_vad with method: silero needs silero-vad and torch; run: pip install 'dataflow[vad]'"


def energy_regions(mono: np.ndarray, rate: int, threshold_dbfs: float, frame_seconds: float) -> list[tuple[float, float]]:
    """(start, end) seconds of runs of frames at or above ``threshold_dbfs``."""
    voiced = frame_db(mono[:, None], rate, frame_seconds) >= threshold_dbfs
    edges = np.flatnonzero(np.diff(np.r_[0, voiced.astype(np.int8), 0]))
    total = len(mono) / rate
    return [(s * frame_seconds, min(e * frame_seconds, total)) for s, e in zip(edges[::2], edges[1::2])]


@functools.lru_cache(maxsize=1)
def _silero():
    try:
        import silero_vad
        import torch
    except ImportError as exc:
        raise ImportError(_SILERO_HINT) from exc
    torch.set_num_threads(1)
    return silero_vad, silero_vad.load_silero_vad()


def _silero_regions(mono: np.ndarray, rate: int, threshold: float) -> list[tuple[float, float]]:
    vad, model = _silero()
    import torch

    if rate != _SILERO_RATE:
        try:
            import soxr
        except ImportError as exc:
            raise ImportError(f"{_SILERO_HINT} (and soxr for {rate} Hz input: pip install 'dataflow[audio]')") from exc
        mono = soxr.resample(mono, rate, _SILERO_RATE).astype(np.float32)
    stamps = vad.get_speech_timestamps(torch.from_numpy(np.ascontiguousarray(mono)), model, threshold=threshold, sampling_rate=_SILERO_RATE)
    return [(s["start"] / _SILERO_RATE, s["end"] / _SILERO_RATE) for s in stamps]


def shape_segments(
    regions: list[tuple[float, float]], total: float, *, min_seconds: float, max_seconds: float, merge_gap_seconds: float, pad_seconds: float
) -> list[tuple[float, float]]:
    """Pad, merge close regions, split long ones evenly to at most ``max_seconds``, drop short ones."""
    merged: list[list[float]] = []
    for start, end in regions:
        start, end = max(0.0, start - pad_seconds), min(total, end + pad_seconds)
        if merged and start - merged[-1][1] <= merge_gap_seconds:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out = []
    for start, end in merged:
        pieces = max(1, int(np.ceil((end - start) / max_seconds - 1e-9)))
        step = (end - start) / pieces
        out += [(start + k * step, start + (k + 1) * step) for k in range(pieces)]
    return [(s, e) for s, e in out if e - s >= min_seconds]


@op(
    name="audio.segment_vad",
    modality="audio",
    inputs=("{column}", "sample_rate"),
    outputs=("{column}", "duration", "start", "end", "segment"),
    kind="flat_map",
    batch_format="row",
    needs=(Needs("method", "silero", ("silero_vad", "torch"), extra="vad"),),
)
def segment_audio_vad(
    row: dict,
    *,
    method: Literal["energy", "silero"] = "energy",
    min_seconds: float = 0.5,
    max_seconds: float = 30.0,
    threshold_dbfs: float = -40.0,
    silero_threshold: float = 0.5,
    frame_seconds: float = 0.03,
    merge_gap_seconds: float = 0.3,
    pad_seconds: float = 0.05,
    column: str = "audio",
) -> list[dict]:
    """Cut each clip into voiced segments, one output row per segment.

    ``energy`` marks frames at or above ``threshold_dbfs`` as voice; ``silero`` runs Silero VAD
    (the model ships in the ``silero-vad`` wheel, loaded once per worker; input is resampled to
    16 kHz for detection). Each segment row gets ``start``/``end``/``duration`` in seconds, its
    index in ``segment``, and ``__source__`` becomes ``<uri>#t=<start>,<end>`` (a media fragment).
    A clip with no voice yields no rows.

    Args:
        method: ``energy`` (no dependencies) or ``silero``.
        min_seconds: Shortest segment kept.
        max_seconds: Longest segment; longer speech is split evenly.
        threshold_dbfs: Energy method: frame level counted as voice.
        silero_threshold: Silero method: speech probability counted as voice.
        frame_seconds: Energy method: frame length.
        merge_gap_seconds: Join segments separated by at most this much silence.
        pad_seconds: Widen each detected region by this much on both sides.
        column: Column holding the (frames, channels) float32 arrays.
    """
    if max_seconds <= 0 or min_seconds > max_seconds:
        raise ValueError(f"audio.segment_vad: need 0 < min_seconds <= max_seconds, got {min_seconds} and {max_seconds}")
    samples, rate = row[column], int(row["sample_rate"])
    if samples is None or samples.ndim != 2 or samples.shape[0] == 0:
        raise RowError(f"audio.segment_vad: expected a (frames, channels) array, got {getattr(samples, 'shape', None)}")
    mono = samples.mean(axis=1, dtype=np.float64).astype(np.float32)
    total = len(mono) / rate
    if method == "silero":
        regions = _silero_regions(mono, rate, silero_threshold)
    else:
        regions = energy_regions(mono, rate, threshold_dbfs, frame_seconds)
    segments = shape_segments(regions, total, min_seconds=min_seconds, max_seconds=max_seconds, merge_gap_seconds=merge_gap_seconds, pad_seconds=pad_seconds)
    source = str(row.get(SOURCE, ""))
    out = []
    for k, (start, end) in enumerate(segments):
        a, b = int(round(start * rate)), int(round(end * rate))
        out.append({
            column: samples[a:b],
            "start": round(float(start), 3),
            "end": round(float(end), 3),
            "duration": (b - a) / rate,
            "segment": k,
            SOURCE: f"{source}{TIME}{start:.3f},{end:.3f}",
        })
    return out
