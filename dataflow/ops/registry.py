"""The op registry: name -> OpSpec, with did-you-mean lookups and third-party loading."""
from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import re

from dataflow.errors import OpDefinitionError, UnknownOpError

__all__ = ["all_ops", "get_op", "register", "suggest"]

_REGISTRY: dict = {}
_REFERENCE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_entry_points_loaded = False


def register(spec) -> None:
    """Add an op; a name registered twice is a definition error (no silent clobbering)."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name].target is not spec.target:
        raise OpDefinitionError(f"op '{spec.name}' is already registered by {_REGISTRY[spec.name].target.__module__}")
    _REGISTRY[spec.name] = spec


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in importlib.metadata.entry_points(group="dataflow.ops"):
        ep.load()


def all_ops() -> list:
    """Return every registered op, built-in and third-party, sorted by name."""
    import dataflow.ops  # noqa: F401  (fills the registry)

    _load_entry_points()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def suggest(name: str, choices: list[str] | None = None) -> list[str]:
    """Return registered names close to ``name``."""
    names = choices if choices is not None else [s.name for s in all_ops()]
    return difflib.get_close_matches(name, names, n=3, cutoff=0.6)


def get_op(name: str):
    """Return the op called ``name``, or the op a ``module:function`` reference points to.

    Raises:
        UnknownOpError: no such op; carries close names as suggestions.
    """
    from dataflow.ops.declare import OpSpec

    if _REFERENCE_RE.match(name):
        module, attr = name.split(":")
        try:
            target = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownOpError(name, [], f"cannot import op reference '{name}' ({exc})") from exc
        if not isinstance(target, OpSpec):
            raise UnknownOpError(name, [], f"'{name}' is not an @op-declared operator")
        return target
    all_ops()
    if name not in _REGISTRY:
        raise UnknownOpError(name, suggest(name))
    return _REGISTRY[name]
