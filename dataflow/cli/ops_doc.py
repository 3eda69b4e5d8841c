"""Text rendering of the op registry for ``dataflow ops``."""
from __future__ import annotations

__all__ = ["describe_op", "list_ops"]


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "")


def describe_op(spec) -> str:
    """The full entry of one op: summary, kind, columns, resources, params with docs."""
    inputs, outputs = spec.inputs, spec.outputs
    lines = [f"{spec.name}  ({spec.kind.value}, {spec.batch_format.value} batches{', stateful' if spec.stateful else ''}{', GPU path' if spec.gpu_capable else ''})"]
    lines.append(f"  {spec.summary}")
    missing, install = spec.missing()
    if missing:
        lines.append(f"  NOT INSTALLED: needs {', '.join(missing)}; run: {install}")
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
        missing, install = s.missing()
        note = f"  [not installed: {install}]" if missing else ""
        gpu = " [GPU path]" if s.gpu_capable else ""
        params = ", ".join(s.params.model_fields)
        out.append(f"{s.name:<{width}}  {s.kind.value:<8} {s.summary}{gpu}{note}\n{'':<{width}}  params: {params or '-'}")
    return "\n".join(out)
