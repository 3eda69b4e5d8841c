"""Imported by the Ray worker warm-up in a test of a job that cannot be pickled: leaves its process id under ``PROBE_DIR``."""
from __future__ import annotations

import os
import pathlib
import tempfile

PROBE_DIR = pathlib.Path(tempfile.gettempdir()) / "dataflow-warm-fallback-probe"
PROBE_DIR.mkdir(exist_ok=True)
(PROBE_DIR / str(os.getpid())).touch()
