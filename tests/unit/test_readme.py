"""The README's two quickstart commands exist, and .ci/run runs the README's test command."""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).parents[2]


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:bash|sh)\n(.+?)\n```", quick, flags=re.S)


def test_readme_quickstart_has_exactly_two_commands():
    commands = _commands()
    assert len(commands) == 2
    assert "examples/quickstart.py" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = _commands()[1]
    assert test_command in ci
