"""examples/quickstart.ipynb runs top to bottom in a real kernel (nbclient + ipykernel) on the session's Ray."""
from __future__ import annotations

import os
import pathlib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).parents[2]


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs if o.output_type in ("execute_result", "display_data"))


def test_quickstart_notebook_previews_runs_shows_the_report_and_round_trips_memory_data(ray_local, tmp_path):
    nb = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "PYTHONPATH": str(ROOT)}
    client = NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env)  # raises CellExecutionError naming the cell on any error
    code = [c for c in nb.cells if c.cell_type == "code"]
    plan, preview, report, page, counted, shown = (_html(c) for c in code[1:])
    assert "<td>1</td><td>image.filter_size</td><td>ray</td><td>min_side=64</td>" in plan
    assert "6 kept, 1 dropped, 1 errored of 8 inputs" in preview and preview.count("<img src='data:image/jpeg;base64,") == 6 + 2  # kept WebP; dropped: source bytes and pixels
    assert "40 read, 36 written, 2 errored" in report
    assert page.startswith("<iframe srcdoc=") and "funnel-plot" in page and "tile kept" in page
    assert (tmp_path / "quickstart_notebook" / "thumbs" / "_dataflow" / "report.html").is_file()
    # An op declared in a cell ran over 300 rows on Ray's workers; a pandas frame and an HF dataset went in and out.
    assert "<table" in counted and "words" in counted and "word word word" in counted
    assert shown.count("<img src='data:image/") == 4 * 2 and shown.count("<small>48x") == 4  # show(): 4 rows, the WebP bytes and the resized pixels
