"""examples/quickstart.ipynb runs top to bottom in a real kernel (nbclient + ipykernel) on the session's Ray."""
from __future__ import annotations

import os
import pathlib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).parents[2]


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs if o.output_type in ("execute_result", "display_data"))


def test_quickstart_notebook_previews_runs_and_shows_the_report(ray_local, tmp_path):
    nb = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "PYTHONPATH": str(ROOT)}
    client = NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env)  # raises CellExecutionError naming the cell on any error
    code = [c for c in nb.cells if c.cell_type == "code"]
    plan, preview, report, page = (_html(c) for c in code[1:])
    assert "<td>1</td><td>image.filter_size</td><td>ray</td><td>min_side=64</td>" in plan
    assert "6 kept, 1 dropped, 1 errored of 8 inputs" in preview and preview.count("<img src='data:image/jpeg;base64,") == 6 + 2  # kept WebP; dropped: source bytes and pixels
    assert "40 read, 36 written, 2 errored" in report
    assert page.startswith("<iframe srcdoc=") and "funnel-plot" in page and "tile kept" in page
    assert (tmp_path / "quickstart_notebook" / "thumbs" / "_dataflow" / "report.html").is_file()
