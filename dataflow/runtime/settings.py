"""Run settings resolved once, with one precedence: flag > environment > pipeline YAML > default.

``resolve_settings`` returns the frozen ``RunSettings`` of a run: for ``dataflow run``,
``dataflow cache`` and the pods ``dataflow k8s render`` writes (whose default cache directory is
the cluster config's, and whose environment is the config's ``env``):

| setting           | flag              | environment                  | YAML                         | default            |
|-------------------|-------------------|------------------------------|------------------------------|--------------------|
| cache directory   | ``--cache-dir``   | ``DATAFLOW_CACHE_DIR``       | ``storage.cache.dir``        | no cache           |
| cache bound       | ``--max-bytes``   | ``DATAFLOW_CACHE_MAX_BYTES`` | ``storage.cache.max_bytes``  | none               |
| storage options   | ``--option``      | (the clients' own)           | ``storage.options``          | none               |
| scratch folder    | (none)            | ``DATAFLOW_SCRATCH_DIR``     | (none)                       | system temp folder |
| credentials file  | (none)            | ``AWS_SHARED_CREDENTIALS_FILE``, ``GOOGLE_APPLICATION_CREDENTIALS`` | (none) | none |

An empty ``--cache-dir`` turns the cache off. Engines receive the ``RunSettings`` in their
``RunContext.settings`` and hand its ``CacheSettings`` and storage options to the connectors. The
scratch folder is node-local disk: ``scratch`` is the driver's (checked before a run), and each
writer on another node uses its own node's (``DATAFLOW_SCRATCH_DIR``, else its temp folder: in
the pods ``dataflow k8s render`` writes, ``TMPDIR`` is the pod's scratch volume). Credentials are held by reference only
(``dataflow.runtime.credentials``): the repr of a ``RunSettings`` and its ``describe()`` redact
any credential written inline in ``storage.options``.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dataflow.errors import DataflowError
from dataflow.runtime.credentials import Credentials, redacted, resolve_credentials

__all__ = ["CacheSettings", "RunSettings", "resolve_cache", "resolve_settings", "usable_settings"]


@dataclass(frozen=True)
class CacheSettings:
    """Where the cache tier keeps its files and how many bytes it may hold (None: no bound)."""

    dir: str
    max_bytes: int | None = None

    def as_options(self) -> dict[str, Any]:
        """The ``{dir, max_bytes}`` form ``connectors.registry.filesystem(cache=)`` takes."""
        return {"dir": self.dir, "max_bytes": self.max_bytes}


@dataclass(frozen=True, repr=False)
class RunSettings:
    """What a run reads, caches and writes with, resolved once (see the module docstring).

    Attributes:
        cache: The cache tier, or None when it is off.
        storage_options: fsspec keywords per scheme (YAML, then flags); may hold inline credentials,
            which ``repr`` and ``describe`` redact.
        scratch: The local folder sink files are written to before their upload.
        credentials: Where the storage credentials come from (names only).
    """

    cache: CacheSettings | None = None
    storage_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    scratch: str = ""
    credentials: Credentials = Credentials()

    def options_for(self, uri: str) -> dict[str, Any]:
        """The storage options of ``uri``'s scheme."""
        from connectors.registry import scheme_of

        return dict(self.storage_options.get(scheme_of(uri), {}))

    def describe(self) -> dict[str, Any]:
        """A JSON-able form for reports and manifests: credential values redacted, references kept."""
        creds = self.credentials
        return {
            "cache": self.cache.as_options() if self.cache else None,
            "storage_options": redacted(self.storage_options),
            "scratch": self.scratch,
            "credentials": {"variables": list(creds.variables), "config_file": creds.config_file, "secrets": list(creds.secrets)},
        }

    def __repr__(self) -> str:
        return f"RunSettings(cache={self.cache!r}, storage_options={redacted(self.storage_options)!r}, scratch={self.scratch!r}, credentials={self.credentials!r})"


def _first(*values):
    return next((v for v in values if v is not None), None)


def resolve_cache(declared: Any = None, *, dir: str | None = None, max_bytes: str | int | None = None,
                  environ: Mapping[str, str] | None = None, default_dir: str | None = None) -> CacheSettings | None:
    """Resolve the cache tier: flag, else environment, else YAML (``declared``, a ``CacheSpec``), else ``default_dir`` (off).

    Args:
        declared: The pipeline's ``storage.cache`` (or None).
        dir: ``--cache-dir``; ``""`` turns the cache off.
        max_bytes: ``--max-bytes`` (a size such as ``200GB``).
        environ: The variables to read (default: this process's).
        default_dir: The directory when nothing names one (``dataflow k8s render``: the cluster config's).

    Raises:
        DataflowError: a size in a flag or variable that is not a size (names it).
    """
    from connectors.registry import parse_size

    env = os.environ if environ is None else environ
    folder = _first(dir, env.get("DATAFLOW_CACHE_DIR") or None, declared.dir if declared else None, default_dir)
    if not folder:
        return None
    for where, value in (("--max-bytes", max_bytes), ("DATAFLOW_CACHE_MAX_BYTES", env.get("DATAFLOW_CACHE_MAX_BYTES") or None)):
        if value is not None:
            try:
                return CacheSettings(folder, parse_size(value))
            except ValueError as exc:
                raise DataflowError(f"{where}: {exc}") from exc
    return CacheSettings(folder, declared.max_bytes if declared and declared.max_bytes else None)


def _schemes(spec: Any, options: Mapping[str, Any]) -> set[str]:
    from connectors.registry import scheme_of

    uris = [] if spec is None else [spec.source.uri, spec.sink.uri, *(s.uri for s in spec.sources.values())]
    return {scheme_of(u) for u in uris} | set(options)


def resolve_settings(
    spec: Any = None,
    *,
    cache_dir: str | None = None,
    max_bytes: str | int | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
    default_cache_dir: str | None = None,
    secrets: tuple[str, ...] = (),
) -> RunSettings:
    """Resolve a run's settings once, flag > environment > YAML > default.

    Args:
        spec: The pipeline (a ``PipelineSpec``), or None (``dataflow cache`` on bare URIs).
        cache_dir: ``--cache-dir``; ``""`` turns the cache off.
        max_bytes: ``--max-bytes``.
        options: ``--option`` storage options per scheme; each key wins over the YAML's.
        environ: The variables to read (default: this process's; the pods' for ``k8s render``).
        default_cache_dir: The cache directory when nothing names one.
        secrets: Kubernetes Secrets the pods take credentials from.

    Raises:
        DataflowError: a size in a flag or variable that is not a size (names it).
    """
    env = os.environ if environ is None else environ
    declared = spec.storage if spec is not None else None
    merged = {k: dict(v) for k, v in (declared.options.items() if declared else ())}
    for scheme, values in (options or {}).items():
        merged.setdefault(scheme, {}).update(values)
    return RunSettings(
        cache=resolve_cache(declared.cache if declared else None, dir=cache_dir, max_bytes=max_bytes, environ=env, default_dir=default_cache_dir),
        storage_options=merged,
        scratch=env.get("DATAFLOW_SCRATCH_DIR") or tempfile.gettempdir(),
        credentials=resolve_credentials(_schemes(spec, merged), env, secrets=secrets),
    )


def usable_settings(spec: Any, *, cache_dir: str | None = None) -> RunSettings:
    """A run's ``RunSettings``, resolved once by the runner; the cache is None when it is off or its directory unusable.

    A cache directory that cannot be used is reported once here, and the run reads directly from remote storage.
    """
    import logging

    from connectors.registry import check_cache

    settings = resolve_settings(spec, cache_dir=cache_dir)
    problem = settings.cache and check_cache(settings.cache)
    if problem:
        logging.getLogger("dataflow.cache").warning("dataflow cache: %s; reading directly from remote storage", problem)
        return replace(settings, cache=None)
    return settings
