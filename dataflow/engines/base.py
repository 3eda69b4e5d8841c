"""The engine contract: declared capabilities (``EngineCaps``), the ``Engine`` base class, run options."""
from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from dataflow.ops.declare import Modality, OpKind
from dataflow.runtime.progress import MIN_FILES_PER_SHARD
from dataflow.runtime.settings import CacheSettings, RunSettings

__all__ = ["CompiledJob", "Engine", "EngineCaps", "RunContext", "RunOptions", "ShardRun"]


@dataclass(frozen=True)
class EngineCaps:
    """What an engine runs and how the runner feeds it, as data the planner and the runner read.

    Attributes:
        name: The engine's name in YAML (``engine: ray``).
        requires: The top-level module the engine needs installed (``ray``, ``pyspark``).
        ops: Names of the ops it lowers (the engine's lowering table's keys); ``None``: every
            registered op (it runs ops as Python).
        source_formats: Source formats it reads; ``None``: every format.
        partitions_inputs: It takes every input as one unit (one shard), splitting work itself.
        whole_listing: It needs the whole input listed before its first shard runs
            (``prepare`` reads every input); else shards run while the listing goes on.
        shard_workers: Shards to run at once; ``None``: ``DATAFLOW_SHARD_CONCURRENCY`` (default 2).
        min_files_per_shard: The smallest shard worth one job of this engine.
        python_table_ops: Besides ``ops``, it runs any row-wise table op (map, filter, flat map:
            ``map_batches`` functions, plugin table ops) as Python in its workers.
    """

    name: str
    requires: str | None = None
    ops: Collection[str] | None = None
    source_formats: frozenset[str] | None = None
    partitions_inputs: bool = False
    whole_listing: bool = False
    shard_workers: int | None = None
    min_files_per_shard: int = MIN_FILES_PER_SHARD
    python_table_ops: bool = False

    def runs(self, op: Any) -> bool:
        """Whether the engine runs the op ``op`` (an ``OpSpec``)."""
        if self.ops is None or op.name in self.ops:
            return True
        return self.python_table_ops and op.modality is Modality.TABLE and op.kind in (OpKind.MAP, OpKind.FILTER, OpKind.FLAT_MAP)

    def reads(self, source_format: str) -> bool:
        """Whether the engine reads sources of ``source_format``."""
        return self.source_formats is None or source_format in self.source_formats


@dataclass(frozen=True)
class RunOptions:
    """How to run: cluster addresses, limits and output preferences (all optional)."""

    address: str | None = None
    spark_master: str | None = None
    object_store_memory: int | None = None
    progress: bool = True
    limit: int | None = None
    cache_dir: str | None = None  # the cache tier's directory (--cache-dir); overrides storage.cache.dir
    max_cpus: float | None = None  # most CPUs of the cluster the run may use (--max-cpus; the broker's lendable share)
    max_gpus: float | None = None  # most GPUs of the cluster the run may use (--max-gpus)
    shuffle_partitions: int | None = None  # Ray: partitions of each global step's shuffle (default 2 per CPU)
    spill_dir: str | None = None  # Ray: where a local Ray spills its object store to disk (default Ray's, under /tmp)
    verbose: bool = False  # show the engines' own INFO and WARNING lines and Ray workers' output (--verbose)
    stream_shards: bool = True  # Ray: every shard of a run in one streaming Dataset; False: one Dataset per shard (--no-stream-shards; README "Shards")


class CompiledJob(Protocol):
    """An engine's lowered job; ``describe()`` is the third section of ``dataflow explain``."""

    engine: str

    def describe(self) -> str: ...


@dataclass(frozen=True)
class RunContext:
    """Where one run writes (its id, the sink's temporary folders) and the run's resolved ``RunSettings``."""

    run_id: str
    tmp_data: str
    side: Any
    settings: RunSettings = field(default_factory=RunSettings)  # cache, storage options, scratch, credential references
    inputs: tuple[str, ...] | None = None  # the shard's input URIs; None: list the source
    publish_root: str | None = None  # object-store sinks, last phase: writers upload finished files here, under their final names

    @property
    def storage_options(self) -> dict[str, dict[str, Any]]:
        """The run's fsspec options per scheme (``settings.storage_options``)."""
        return self.settings.storage_options

    @property
    def cache(self) -> CacheSettings | None:
        """The cache tier (``settings.cache``), handed to ``connectors.registry.filesystem(cache=)``."""
        return self.settings.cache


@dataclass(frozen=True)
class ShardRun:
    """One shard to run: the shard (``dataflow.runtime.progress.Shard``), its tmp folder and its context."""

    shard: Any
    tmp: str
    ctx: RunContext


class Engine(ABC):
    """Lower and run plans on one execution engine; the runner commits what it wrote.

    A subclass declares ``caps`` and implements ``compile``, ``execute`` and ``take``.
    """

    caps: ClassVar[EngineCaps]

    @property
    def name(self) -> str:
        return self.caps.name

    @abstractmethod
    def compile(self, plan: Any) -> CompiledJob:
        """Lower an optimized plan (every node on this engine) to a job; starts nothing."""

    @abstractmethod
    def start(self, options: RunOptions, job: CompiledJob | None = None) -> None:
        """Start or join the engine's session; the runner calls it on the main thread while it lists the inputs.

        ``job``: the job the run will execute, where the runner knows it: an engine may prepare its
        workers for it (the Ray engine's warm-up imports what the job's tasks unpickle).
        """

    @abstractmethod
    def execute(self, job: CompiledJob, ctx: RunContext, options: RunOptions) -> list[Any]:
        """Run the job to its shard writers; return the ``WrittenFile`` entries."""

    @abstractmethod
    def take(self, job: CompiledJob, n: int, ctx: RunContext, options: RunOptions) -> list[dict[str, Any]]:
        """Run the job without its sink and return its first ``n`` rows."""

    def prepare(self, job: CompiledJob, inputs: list[str], storage: dict[str, Any]) -> CompiledJob:
        """Fix what must not vary between shards, from the sorted input (every input with ``caps.whole_listing``, else the first shards'); by default nothing."""
        return job

    def parallelism(self) -> float | None:
        """CPUs the started engine runs on (shard sizing follows it); None: unknown."""
        return None

    def warm(self) -> threading.Event | None:
        """Set once the started engine's workers are warm (imports, first execution); None: nothing to wait for.

        The runner holds the first shards back until it is set (at most ``runner.WARM_WAIT_S``):
        the warm-up is paid once, beside the listing where it is still going on, instead of by the
        first shard.
        """
        return None

    def execute_shards(self, job: CompiledJob, runs: list[ShardRun], options: RunOptions, done: Callable[[ShardRun, list[Any]], bool]) -> None:
        """Run every shard and call ``done(run, written)`` on this thread as each finishes; stop when it returns False.

        By default each shard is one ``execute`` (a few at once: ``caps.shard_workers``, else
        ``DATAFLOW_SHARD_CONCURRENCY``, default 2). An engine may run them in one execution.
        """
        workers = self.caps.shard_workers or max(1, int(os.environ.get("DATAFLOW_SHARD_CONCURRENCY", "2")))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(self.execute, job, r.ctx, options) if r.shard.inputs else pool.submit(list): r for r in runs}
            for future in as_completed(futures):
                if not done(futures[future], future.result()):
                    pool.shutdown(cancel_futures=True)
                    break
