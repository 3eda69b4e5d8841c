"""Plan, DSL, ops and connectors never import an engine (checked in a fresh interpreter)."""
from __future__ import annotations

import subprocess
import sys


def test_non_engine_modules_do_not_import_ray_or_pyspark():
    code = (
        "import sys, pkgutil, importlib, dataflow, connectors\n"
        "skip = ('dataflow.engines', 'dataflow.runner', 'dataflow.cli', 'dataflow.__main__')\n"
        "for pkg in (dataflow, connectors):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        if not m.name.startswith(skip):\n"
        "            importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('ray', 'pyspark')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_engine_registry_reads_capabilities_without_ray_or_pyspark():
    code = (
        "import sys\n"
        "from dataflow.engines.registry import engine_caps\n"
        "caps = engine_caps(installed_only=False)\n"
        "assert sorted(caps) == ['ray', 'spark'] and caps['spark'].ops, caps\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('ray', 'pyspark')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
