"""Keep credentials out of manifests: they reach pods only by Secret reference.

The pipeline travels verbatim in a ConfigMap, so a credential written into it would be stored in
the clear. Credentials are written as ``${VAR}`` in the pipeline, and ``VAR`` comes from a
Secret (``secret_env`` or ``env_from_secrets`` in the cluster config). Every message here names
the place of a credential, never its value.
"""
from __future__ import annotations

import re
from typing import Any

from dataflow.dsl.yaml_io import LineMap, format_path
from dataflow.errors import PipelineSpecError, SpecIssue
from dataflow.runtime.credentials import looks_secret

__all__ = ["check_env", "check_pipeline_credentials", "looks_secret", "referenced_variables"]

_ONLY_REFERENCE_RE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_REFERENCE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
_URI_USERINFO_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s]*:[^/@\s]+@")
_FIX = "write ${VAR} instead and map VAR to a Secret in the cluster config (secret_env or env_from_secrets)"


def _walk(node: Any, path: tuple = ()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, (*path, i))
    else:
        yield path, node


def referenced_variables(data: Any) -> set[str]:
    """Return the names of every ``${VAR}`` the pipeline data refers to."""
    return {m.group(1) for _, v in _walk(data) if isinstance(v, str) for m in _REFERENCE_RE.finditer(v)}


def check_pipeline_credentials(data: Any, lines: LineMap, file: str | None, secret_vars: set[str], env_from: bool) -> None:
    """Refuse a pipeline whose credentials would be stored in the ConfigMap.

    Args:
        data: The pipeline as loaded from YAML (before ``${VAR}`` substitution).
        lines: Key path -> (line, column) of that document.
        file: The pipeline file, for messages.
        secret_vars: Variables the cluster config takes from Secret keys.
        env_from: Whether whole Secrets are mounted as variables (any unmapped variable may come from them).

    Raises:
        PipelineSpecError: naming each inline credential and each credential variable no Secret provides.
    """
    issues = []

    def issue(path: tuple, message: str) -> None:
        line, col = lines.get(path, (None, None))
        issues.append(SpecIssue(key=format_path(path), message=message, file=file, line=line, col=col))

    for path, value in _walk(data):
        if not isinstance(value, str):
            continue
        name = next((str(p) for p in reversed(path) if isinstance(p, str)), "")
        if looks_secret(name) and value and not _ONLY_REFERENCE_RE.match(value):
            issue(path, f"a credential is written in the pipeline, which travels in a ConfigMap; {_FIX}")
        elif _URI_USERINFO_RE.match(value):
            issue(path, f"a URI carries a user and password, which would be stored in a ConfigMap; {_FIX}")
        for match in _REFERENCE_RE.finditer(value):
            var = match.group(1)
            if looks_secret(var) and var not in secret_vars and not env_from:
                issue(
                    path,
                    f"${{{var}}} is a credential but no Secret provides it; add secret_env: {{{var}: "
                    "{secret: NAME, key: KEY}} or env_from_secrets: [NAME] to the cluster config",
                )
    if issues:
        raise PipelineSpecError(issues)


def check_env(env: dict[str, str], file: str | None) -> None:
    """Refuse plain ``env`` entries of the cluster config whose names say they are credentials.

    Raises:
        PipelineSpecError: naming each such variable (never its value).
    """
    bad = [name for name in env if looks_secret(name)]
    if bad:
        raise PipelineSpecError(
            [
                SpecIssue(
                    key=f"env.{name}", file=file,
                    message="a credential as a plain value would be stored in the manifest; move it to a Secret "
                    f"and reference it with secret_env: {{{name}: {{secret: NAME, key: KEY}}}}",
                )
                for name in bad
            ]
        )
