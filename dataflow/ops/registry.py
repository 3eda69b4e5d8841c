"""The op registry: name -> OpSpec, with did-you-mean lookups and third-party loading.

Built-in ops are imported lazily (fsspec style): ``BUILTIN_OPS`` lists their names, and the op
``<namespace>.<verb>`` lives in ``dataflow.ops.<namespace>.<verb>``, imported the first time it is
asked for, so ``import dataflow`` does not pay for Pillow, soundfile or pyarrow. Third-party ops
come from the ``dataflow.ops`` entry-point group: each entry point names a module whose ``@op``
declarations register when it is imported; they load when a name is not built-in, or on listing.
"""
from __future__ import annotations

import difflib
import importlib
import re

from dataflow.errors import OpDefinitionError, UnknownOpError

__all__ = ["BUILTIN_OPS", "ENTRY_POINT_GROUP", "all_ops", "free_local_name", "get_op", "is_local", "register", "register_local", "suggest", "yaml_name"]

ENTRY_POINT_GROUP = "dataflow.ops"
# Kept sorted; a test checks it against the modules under dataflow/ops/<family>/.
BUILTIN_OPS = (
    "audio.decode", "audio.encode", "audio.filter_duration", "audio.filter_loudness", "audio.resample", "audio.segment_vad",
    "audio.to_mono",
    "image.decode", "image.dedup_phash", "image.embed", "image.encode", "image.filter_aspect_ratio", "image.filter_blur",
    "image.filter_nsfw", "image.filter_size", "image.phash", "image.resize",
    "table.aggregate", "table.cast", "table.dedup", "table.filter_rows", "table.join", "table.parse_json", "table.parse_regex",
    "table.select", "table.window_aggregate", "table.window_columns", "table.with_columns",
    "text.dedup_exact", "text.dedup_minhash", "text.dedup_semantic", "text.detect_language", "text.embed", "text.filter_length",
    "text.filter_quality", "text.normalize", "text.redact_pii",
)

_REGISTRY: dict = {}
_LOCAL: dict = {}  # ops made from plain functions (``Pipeline.map_batches``): this process only, never listed
_REFERENCE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_entry_points_loaded = False


def builtin_module(name: str) -> str:
    """Return the module that declares the built-in op ``name``."""
    return f"dataflow.ops.{name}"


def register(spec) -> None:
    """Add an op; a name registered twice, or a built-in name taken elsewhere, is a definition error."""
    if spec.name in BUILTIN_OPS and spec.target.__module__ != builtin_module(spec.name):
        raise OpDefinitionError(f"op '{spec.name}' is a built-in op of {builtin_module(spec.name)}; choose another name")
    if spec.name in _REGISTRY and _REGISTRY[spec.name].target is not spec.target:
        raise OpDefinitionError(f"op '{spec.name}' is already registered by {_REGISTRY[spec.name].target.__module__}")
    _REGISTRY[spec.name] = spec


def free_local_name(base: str) -> str:
    """``base``, or ``base_2``, ``base_3``... whichever no op holds yet."""
    name, n = base, 1
    while name in _LOCAL or name in _REGISTRY:
        n += 1
        name = f"{base}_{n}"
    return name


def register_local(spec) -> None:
    """Add an op made from a plain function; it is known to this process only (YAML cannot name it)."""
    _LOCAL[spec.name] = spec


def is_local(name: str) -> bool:
    """Whether ``name`` is an op made from a plain function in this process."""
    return name in _LOCAL


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    import importlib.metadata

    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:
            dist = getattr(ep.dist, "name", None) or "an installed distribution"
            raise OpDefinitionError(
                f"{ENTRY_POINT_GROUP} entry point '{ep.name} = {ep.value}' of {dist} failed to load: {type(exc).__name__}: {exc}"
            ) from exc


def all_ops() -> list:
    """Return every registered op, built-in and third-party, sorted by name (imports them all)."""
    for name in BUILTIN_OPS:
        importlib.import_module(builtin_module(name))
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
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _LOCAL:
        return _LOCAL[name]
    if name in BUILTIN_OPS:
        importlib.import_module(builtin_module(name))
    else:
        _load_entry_points()
    if name not in _REGISTRY:
        raise UnknownOpError(name, suggest(name))
    return _REGISTRY[name]


def yaml_name(name: str) -> tuple[str, str | None]:
    """How a step's op is written in YAML so that a fresh process finds it: (name or ``module:function``, problem or None).

    Built-in and plugin ops keep their name; another op declared in a module becomes its reference;
    a plain function or an op declared in ``__main__`` (a script or notebook cell) cannot be written.
    """
    import importlib.metadata

    from dataflow.ops.shipping import reference

    if _REFERENCE_RE.match(name) or name in BUILTIN_OPS:
        return name, None
    spec = get_op(name)
    if name in _LOCAL:
        return name, (f"'{name}' is a plain function given to map_batches: YAML can name only ops a fresh process imports "
                      "(declare it with @op in a module, then apply it by name or as module:function)")
    ref = reference(spec)
    if ref is None:
        return name, (f"op '{name}' is declared in {spec.target.__module__} (a script or notebook cell), which a fresh process "
                      "cannot import: move it into a module and apply it by name or as module:function")
    plugins = {ep.value.split(":")[0] for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return (name if spec.target.__module__ in plugins else ref), None
