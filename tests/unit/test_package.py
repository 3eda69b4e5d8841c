"""Package manners: a fast ``import dataflow`` and ``dataflow --help``, ``--version``, and a true ``requires-python``."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

import dataflow
from dataflow.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
HEAVY = ("numpy", "pandas", "pyarrow", "PIL", "soundfile", "pydantic", "yaml", "ray", "pyspark")
# The budget is 0.3 s; 3x leaves room for a loaded 2-core machine. Timed in-process after the
# interpreter started (its own start is not ours), best of 3.
BUDGET_S = 0.9
# Newest release of each dependency that installs on Python 3.10, checked on 2026-12-03 with
# `pip index versions NAME --python-version 3.10 --only-binary=:all:`. Our floor of each is newer,
# so none of them installs on 3.10, and 3.11 is the lowest Python the dependencies allow
# (the installed numpy 2.4.6, pyarrow 26.0.1, pillow 13.0.0 and pyspark 4.3.0 all say
# Requires-Python >=3.11).
NEWEST_ON_PY310 = {"numpy": "2.2.6", "pyarrow": "25.0.1", "pillow": "12.3.0"}
PYTHON_FLOOR = (3, 11)


def _imports(statement: str) -> tuple[float, list[str]]:
    code = (
        "import sys, time\n"
        f"t = time.perf_counter(); {statement}; t = time.perf_counter() - t\n"
        f"print(t, *[m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)\n"
    )
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60).stderr.split()
        runs.append((float(out[0]), out[1:]))
    return min(runs)


def test_import_dataflow_is_fast_and_imports_no_heavy_library():
    seconds, heavy = _imports("import dataflow")
    assert heavy == [] and seconds <= BUDGET_S


def test_the_cli_help_is_fast_and_imports_no_heavy_library():
    seconds, heavy = _imports("from dataflow.cli.main import cli; cli(['--help'], standalone_mode=False)")
    assert heavy == [] and seconds <= BUDGET_S


def test_the_public_names_import_lazily():
    from dataflow import Pipeline, Resources, op, read

    assert Pipeline.__module__ == "dataflow.pipeline" and read.__module__ == "dataflow.pipeline"
    assert (op.__module__, Resources.__module__) == ("dataflow.ops.declare", "dataflow.ops.resources")
    assert set(dataflow.__all__) <= set(dir(dataflow))


def test_version_option_and_version_command():
    for args in (["--version"], ["-V"]):
        result = CliRunner().invoke(cli, args)
        assert (result.exit_code, result.output) == (0, f"dataflow {dataflow.__version__}\n")
    result = CliRunner().invoke(cli, ["version"])
    assert result.exit_code == 0 and result.output.startswith(f"dataflow {dataflow.__version__}, ray ")


def _floor(requirement: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.search(r">=\s*([\d.]+)", requirement).group(1).split("."))


def test_requires_python_is_the_floor_the_dependencies_allow():
    assert PYPROJECT["requires-python"] == ">={}.{}".format(*PYTHON_FLOOR)
    floors = {re.match(r"[A-Za-z0-9_-]+", d).group(0).lower(): _floor(d) for d in PYPROJECT["dependencies"]}
    for name, newest in NEWEST_ON_PY310.items():
        assert floors[name] > tuple(map(int, newest.split("."))), f"{name}'s floor installs on 3.10 again: requires-python may go down"
    versions = [tuple(map(int, c.rsplit(" ", 1)[1].split("."))) for c in PYPROJECT["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert PYTHON_FLOOR in versions and min(versions) == PYTHON_FLOOR
    assert sys.version_info[:2] >= PYTHON_FLOOR
