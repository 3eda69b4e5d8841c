"""The Ray engine never pulls data rows to the driver: no ray.get, take_all, to_pandas, or whole-dataset iteration.

An AST scan of every module under dataflow/engines/ray. A call that reads plan-sized data at the
driver is allowed only where ``ALLOWED`` names it, with the reason.
"""
from __future__ import annotations

import ast
import pathlib

import dataflow.engines.ray as ray_engine

#: Methods that bring a dataset's rows (or their object refs) to the driver; ``get`` only as ``ray.get``.
FORBIDDEN = ("take_all", "take_batch", "to_pandas", "to_arrow_refs", "to_numpy_refs", "iter_batches", "iter_rows", "iter_torch_batches", "get", "take")
#: Plan-sized driver reads: (module, enclosing function, method) -> why the data is plan-sized.
#: Scalar aggregates (``ds.count()``, ``ds.sum(col)``: one number) are plan-sized and not listed.
ALLOWED = {
    ("engine.py", "take", "iter_batches"): "dataflow take/preview: stops after the n rows the user asked for",
    ("global_ops.py", "semantic_dedup", "to_arrow_refs"): "the refs of the fitted centroids: one row (k x d floats), not data rows",
    ("global_ops.py", "_load", "get"): "_Assign._load, in a map task (never the driver): the one centroid row",
    ("global_ops.py", "apply_global", "to_arrow_refs"): "a join's small right side (at most broadcast_bytes): refs handed to the map tasks, not rows",
    ("global_ops.py", "_merged_in_one_task", "to_arrow_refs"): "small partial aggregation states (at most merge_task_bytes): refs handed to the merge task, not rows",
    ("global_ops.py", "_right", "get"): "_BroadcastJoin._right, in a map task (never the driver): the small right side",
    ("memory_io.py", "arrow_table", "to_arrow_refs"): "Pipeline.to_arrow/to_pandas: the user asked for the rows in this process",
    ("memory_io.py", "arrow_table", "get"): "Pipeline.to_arrow/to_pandas: the user asked for the rows in this process",
    ("run.py", "stream_written", "iter_batches"): "the writers' output: one record per written file (path, rows, bytes)",
    ("session.py", "_warm", "iter_batches"): "the warm-up Dataset: range(CPUs), one integer per CPU",
    ("session.py", "_warm", "get"): "the warm-up tasks' results: one None per CPU",
    ("stream.py", "stream_shards", "iter_batches"): "the routed writers' output: one record per written file (path, rows, bytes, shard)",
}


def _calls(path: pathlib.Path):
    """(enclosing function, method name, line, receiver, first argument) of each ``x.name(...)`` call in ``path``."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                first = ast.unparse(child.args[0]) if child.args else ""
                found.append((inner, child.func.attr, child.lineno, ast.unparse(child.func.value), first))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def _reads_rows(name: str, target: str, first: str) -> bool:
    if name == "get":
        return target == "ray"  # not dict.get
    if name == "take":
        return not (target == "pc" or first.startswith("pa.array("))  # Arrow takes by index array, inside tasks
    return name in FORBIDDEN


def test_no_module_of_the_ray_engine_reads_data_rows_at_the_driver():
    root = pathlib.Path(ray_engine.__file__).parent
    bad = [
        f"{path.name}:{line} {func}: {target}.{name}(...)"
        for path in sorted(root.glob("*.py"))
        for func, name, line, target, first in _calls(path)
        if _reads_rows(name, target, first) and (path.name, func, name) not in ALLOWED
    ]
    assert not bad, "driver reads of data rows (allow plan-sized ones in ALLOWED with a reason): " + "; ".join(bad)


def test_the_scan_sees_a_forbidden_call(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import ray\ndef f(ds, t):\n    rows = ds.take_all()\n    t.take(pa.array([0]))\n    return ray.get(rows), ds.take(5)\n")
    calls = [(f, n) for f, n, _, t, a in _calls(src) if _reads_rows(n, t, a)]
    assert sorted(calls) == [("f", "get"), ("f", "take"), ("f", "take_all")]
