"""Credentials by reference: where a run's credentials come from, never what they are.

A run names the variables, the file and the Kubernetes Secrets its storage takes credentials
from; the values stay in the environment, the file or the Secret. Anything a run prints, logs,
reprs or writes to a manifest goes through ``redacted`` first, so a credential written inline in
``storage.options`` shows as ``<redacted>``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REDACTED", "Credentials", "looks_secret", "redacted", "resolve_credentials"]

REDACTED = "<redacted>"
_SECRET_WORDS = {"secret", "secrets", "password", "passwd", "pwd", "token", "credential", "credentials", "apikey"}
_SECRET_PAIRS = {("access", "key"), ("api", "key"), ("private", "key"), ("key", "id"), ("secret", "key"), ("account", "key")}
_WORD_RE = re.compile(r"[a-z0-9]+")
# Per scheme: the standard variables its client reads credentials from, and those naming a credentials file.
_VARIABLES = {
    "s3": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"),
    "gs": ("GOOGLE_APPLICATION_CREDENTIALS",),
    "az": ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN"),
}
_FILE_VARIABLES = {"s3": "AWS_SHARED_CREDENTIALS_FILE", "gs": "GOOGLE_APPLICATION_CREDENTIALS"}


def looks_secret(name: str) -> bool:
    """Tell whether a key or variable name names a credential (``secret``, ``AWS_SECRET_ACCESS_KEY``, ``key``)."""
    words = _WORD_RE.findall(name.lower())
    if words == ["key"] or any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def redacted(value: Any) -> Any:
    """``value`` with every credential-named key's value replaced by ``<redacted>`` (nested mappings and lists too)."""
    if isinstance(value, Mapping):
        return {k: REDACTED if looks_secret(str(k)) and v not in (None, "") else redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(v) for v in value)
    return value


@dataclass(frozen=True)
class Credentials:
    """Where the storage credentials come from: names only.

    Attributes:
        variables: Environment variables holding them (``AWS_SECRET_ACCESS_KEY``), set here.
        config_file: A credentials file (``AWS_SHARED_CREDENTIALS_FILE``), when one is named.
        secrets: Kubernetes Secrets the pods take them from (``secret_env``, ``env_from_secrets``).
    """

    variables: tuple[str, ...] = ()
    config_file: str | None = None
    secrets: tuple[str, ...] = ()


def resolve_credentials(schemes: set[str], environ: Mapping[str, str], *, secrets: tuple[str, ...] = ()) -> Credentials:
    """The credential references of storage ``schemes``: the variables set, the file one names, the pods' Secrets."""
    variables = tuple(sorted({v for s in schemes for v in _VARIABLES.get(s, ()) if environ.get(v)}))
    named = next((environ[_FILE_VARIABLES[s]] for s in sorted(schemes) if s in _FILE_VARIABLES and environ.get(_FILE_VARIABLES[s])), None)
    return Credentials(variables=variables, config_file=named, secrets=tuple(sorted(secrets)))
