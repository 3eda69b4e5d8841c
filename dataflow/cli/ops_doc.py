"""Text rendering of the op registry for ``dataflow ops``."""
from __future__ import annotations

import importlib.util

__all__ = ["describe_op", "list_ops", "missing_requirements"]


def missing_requirements(spec) -> list[str]:
    """Modules an op needs that are not installed."""
    return [m for m in spec.requires if importlib.util.find_spec(m.split(".")[0]) is None]


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "")


def describe_op(spec) -> str:
    """The full entry of one op: summary, kind, columns, resources, params with docs."""
    inputs, outputs = spec.inputs, spec.outputs
    lines = [f"{spec.name}  ({spec.kind.value}, {spec.batch_format.value} batches{', stateful' if spec.stateful else ''}{', GPU path' if spec.gpu_target else ''})"]
    lines.append(f"  {spec.summary}")
    missing = missing_requirements(spec)
    if missing:
        lines.append(f"  NOT INSTALLED: needs {', '.join(missing)}; run: pip install 'dataflow[{spec.extra}]'")
    lines.append(f"  reads: {', '.join(inputs) or '-'}   writes: {', '.join(outputs) or '-'}")
    if spec.resources.as_dict():
        lines.append(f"  resources: {spec.resources.as_dict()}")
    if spec.params.model_fields:
        lines.append("  params:")
        for name, field in spec.params.model_fields.items():
            default = "required" if field.is_required() else f"default {field.default!r}"
            lines.append(f"    {name} ({_type_name(field.annotation)}, {default}): {field.description}")
    return "\n".join(lines)


def list_ops(specs) -> str:
    """One line per op: name, kind and summary (and the extra to install, if missing)."""
    width = max((len(s.name) for s in specs), default=0)
    out = []
    for s in specs:
        note = f"  [not installed: pip install 'dataflow[{s.extra}]']" if missing_requirements(s) else ""
        params = ", ".join(s.params.model_fields)
        out.append(f"{s.name:<{width}}  {s.kind.value:<8} {s.summary}{note}\n{'':<{width}}  params: {params or '-'}")
    return "\n".join(out)
