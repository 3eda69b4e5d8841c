"""Audio operators: arrays are float32 (frames, channels) with a ``sample_rate`` column."""
from dataflow.ops.audio import decode, encode, filter_duration, filter_loudness, resample, segment_vad, to_mono  # noqa: F401
