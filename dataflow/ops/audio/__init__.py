"""Audio operators: arrays are float32 (frames, channels) with a ``sample_rate`` column."""
