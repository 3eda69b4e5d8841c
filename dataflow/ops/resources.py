"""What an op asks of a worker (``Resources``) and the modules some parameter values need (``Needs``)."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from dataflow.errors import OpDefinitionError

__all__ = ["Needs", "Resources"]


@dataclass(frozen=True)
class Resources:
    """What one worker of a step needs, in Ray's words.

    Args:
        num_cpus: CPUs per task or actor (fractions allowed).
        num_gpus: GPUs per task or actor; above 1 it must be a whole number.
        memory: Bytes of memory per task or actor.
        concurrency: Number of actors (or maximum parallel tasks).
        batch_size: Rows per batch handed to the op.
    """

    num_cpus: float | None = None
    num_gpus: float | None = None
    memory: int | None = None
    concurrency: int | None = None
    batch_size: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and value < 0:
                raise OpDefinitionError(f"Resources.{f.name} must be >= 0, got {value}")
        if self.num_gpus is not None and self.num_gpus > 1 and self.num_gpus != int(self.num_gpus):
            raise OpDefinitionError(f"Resources.num_gpus above 1 must be a whole number, got {self.num_gpus}")

    def merged(self, override: Resources | None) -> Resources:
        """Return these resources with every value set in ``override`` replacing ours."""
        if override is None:
            return self
        changes = {f.name: getattr(override, f.name) for f in fields(override) if getattr(override, f.name) is not None}
        return replace(self, **changes)

    def as_dict(self) -> dict[str, float | int]:
        """Return the values that are set."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Needs:
    """Modules an op needs only when one of its parameters has a given value.

    Args:
        param: The parameter, e.g. ``method``.
        value: The value that needs the modules, e.g. ``silero``.
        modules: Modules that must import.
        extra: The pip extra that installs them.
    """

    param: str
    value: Any
    modules: tuple[str, ...]
    extra: str | None = None
