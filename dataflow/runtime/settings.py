"""Run settings resolved once, with one precedence: flag > environment > pipeline YAML > default.

``resolve_cache`` decides where the cache tier lives and how large it may grow, for ``dataflow
run``, ``dataflow cache`` and the pods ``dataflow k8s render`` writes (which set the variables):

| setting         | flag              | environment                | YAML                         | default |
|-----------------|-------------------|----------------------------|------------------------------|---------|
| cache directory | ``--cache-dir``   | ``DATAFLOW_CACHE_DIR``     | ``storage.cache.dir``        | no cache|
| cache bound     | ``--max-bytes``   | ``DATAFLOW_CACHE_MAX_BYTES``| ``storage.cache.max_bytes`` | none    |

An empty ``--cache-dir`` turns the cache off.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dataflow.errors import DataflowError

__all__ = ["CacheSettings", "resolve_cache"]


@dataclass(frozen=True)
class CacheSettings:
    """Where the cache tier keeps its files and how many bytes it may hold (None: no bound)."""

    dir: str
    max_bytes: int | None = None

    def as_options(self) -> dict[str, Any]:
        """The ``{dir, max_bytes}`` form ``connectors.registry.filesystem(cache=)`` takes."""
        return {"dir": self.dir, "max_bytes": self.max_bytes}


def _first(*values):
    return next((v for v in values if v is not None), None)


def resolve_cache(declared: Any = None, *, dir: str | None = None, max_bytes: str | int | None = None,
                  environ: Mapping[str, str] | None = None) -> CacheSettings | None:
    """Resolve the cache tier: flag, else environment, else YAML (``declared``, a ``CacheSpec``), else off.

    Args:
        declared: The pipeline's ``storage.cache`` (or None).
        dir: ``--cache-dir``; ``""`` turns the cache off.
        max_bytes: ``--max-bytes`` (a size such as ``200GB``).
        environ: The variables to read (default: this process's).

    Raises:
        DataflowError: a size in a flag or variable that is not a size (names it).
    """
    from connectors.registry import parse_size

    env = os.environ if environ is None else environ
    folder = _first(dir, env.get("DATAFLOW_CACHE_DIR") or None, declared.dir if declared else None)
    if not folder:
        return None
    for where, value in (("--max-bytes", max_bytes), ("DATAFLOW_CACHE_MAX_BYTES", env.get("DATAFLOW_CACHE_MAX_BYTES") or None)):
        if value is not None:
            try:
                return CacheSettings(folder, parse_size(value))
            except ValueError as exc:
                raise DataflowError(f"{where}: {exc}") from exc
    return CacheSettings(folder, declared.max_bytes if declared and declared.max_bytes else None)
