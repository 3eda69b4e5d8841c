"""The fleet file (``clusters.yaml``): which clusters dataflow may borrow, when, and how much.

Validated like a pipeline: every problem at once, each with its line, column and a suggestion::

    clusters:
      - name: train-a                 # a Ray cluster, reached by its dashboard / Job API address
        kind: ray
        address: http://10.0.0.5:8265
        token_file: ~/.ray/train-a.token   # bearer token of a cluster with token auth
        windows: ["22:00-08:00"]      # when it may be borrowed, in `timezone` (default: always)
        timezone: Europe/Berlin       # the cluster's local time zone (default: this machine's)
        reserve: {num_cpus: 8, num_gpus: 0}   # never borrow below this much idle capacity
        max_share: 0.5                # at most this fraction of its total resources
        priority: 10                  # higher wins among clusters that fit
      - name: k8s-b                   # a Kubernetes cluster: kubeconfig context + namespace + Volcano queue
        kind: kubernetes
        context: prod-b
        namespace: data
        queue: data-borrow
    watch: {poll_seconds: 5, grace_seconds: 30, cooldown_seconds: 600}
"""
from __future__ import annotations

import datetime as dt
import os
import re
import zoneinfo
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from dataflow.dsl.parse import _hint, _issues_from_validation
from dataflow.dsl.yaml_io import LineMap, format_path, load, substitute_env
from dataflow.errors import PipelineSpecError, SpecIssue

__all__ = [
    "ClustersFileError",
    "Fleet",
    "KubernetesCluster",
    "RayCluster",
    "Reserve",
    "WatchSettings",
    "Window",
    "auth_headers",
    "load_clusters",
    "parse_clusters",
]

_WINDOW_RE = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2}))?-(\d{2}):(\d{2})(?::(\d{2}))?$")


class ClustersFileError(PipelineSpecError):
    """``clusters.yaml`` is invalid; ``issues`` lists every problem with its place."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Reserve(_Model):
    """Idle capacity the owner keeps: dataflow never borrows below it."""

    num_cpus: float = Field(0, ge=0, description="CPUs always left idle.")
    num_gpus: float = Field(0, ge=0, description="GPUs always left idle.")
    memory: int = Field(0, ge=0, description="Bytes of memory always left idle.")


class _Borrowing(_Model):
    name: str = Field(description="Cluster name, as --cluster NAME and the reports use it.")
    windows: list[str] = Field(default_factory=list, description="'HH:MM-HH:MM' spans when the cluster may be borrowed; none: always.")
    timezone: str | None = Field(None, description="IANA time zone of the windows; default: this machine's.")
    reserve: Reserve = Field(default_factory=Reserve, description="Idle capacity never borrowed.")
    max_share: float = Field(1.0, gt=0, le=1, description="Most of the cluster's total resources one run may use.")
    priority: int = Field(0, description="Higher wins among clusters that fit.")


class RayCluster(_Borrowing):
    """A Ray cluster reached over HTTP: its dashboard for capacity, its Job API for runs."""

    kind: Literal["ray"]
    address: str = Field(description="Dashboard / Job API address, http://host:8265.")
    token_file: str | None = Field(None, description="File holding the bearer token (Ray token auth); default: $RAY_AUTH_TOKEN, else ~/.ray/auth_token if present.")
    token_env: str | None = Field(None, description="Environment variable holding the bearer token.")


class KubernetesCluster(_Borrowing):
    """A Kubernetes cluster: capacity is node allocatable minus pod requests, plus the Volcano queue."""

    kind: Literal["kubernetes"]
    namespace: str = Field(description="Namespace dataflow's pods run in.")
    context: str | None = Field(None, description="kubeconfig context; default: the current one.")
    kubeconfig: str | None = Field(None, description="kubeconfig file; default: ~/.kube/config.")
    queue: str | None = Field(None, description="Volcano queue whose status limits what may be borrowed.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Only nodes with these labels are counted.")


class WatchSettings(_Model):
    """How the broker watches borrowed clusters."""

    poll_seconds: float = Field(5, gt=0, description="Seconds between checks of a borrowed cluster.")
    grace_seconds: int = Field(30, ge=1, description="Seconds a stopped job gets after SIGTERM before SIGKILL.")
    cooldown_seconds: float = Field(600, ge=0, description="Seconds a cluster given back is not borrowed again by the same run.")


class _File(_Model):
    clusters: list[dict[str, Any]] = Field(description="The clusters, each with a name and a kind (ray or kubernetes).")
    watch: WatchSettings = Field(default_factory=WatchSettings)


KINDS: dict[str, type[_Borrowing]] = {"kubernetes": KubernetesCluster, "ray": RayCluster}
Cluster = RayCluster | KubernetesCluster


@dataclass(frozen=True)
class Window:
    """A daily span of local time; one whose end is before its start runs past midnight."""

    start: dt.time
    end: dt.time
    text: str

    def contains(self, t: dt.time) -> bool:
        if self.start < self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end


def parse_window(text: str) -> Window | None:
    """``"22:00-08:00"`` (seconds optional) as a Window; None when malformed."""
    m = _WINDOW_RE.match(text.strip()) if isinstance(text, str) else None
    if not m:
        return None
    h1, m1, s1, h2, m2, s2 = (int(g) if g else 0 for g in m.groups())
    if max(h1, h2) > 23 or max(m1, m2) > 59 or max(s1, s2) > 59:
        return None
    start, end = dt.time(h1, m1, s1), dt.time(h2, m2, s2)
    return None if start == end else Window(start, end, text.strip())


@dataclass(frozen=True)
class Fleet:
    """The validated clusters file."""

    clusters: tuple[Cluster, ...]
    watch: WatchSettings
    file: str | None = None

    def get(self, name: str) -> Cluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    def names(self) -> list[str]:
        return [c.name for c in self.clusters]


def windows_of(cluster: Cluster) -> list[Window]:
    """The cluster's windows (validated when the file was read)."""
    return [w for w in (parse_window(t) for t in cluster.windows) if w is not None]


def window_state(cluster: Cluster, now: dt.datetime | None = None) -> tuple[bool, str]:
    """Whether the cluster may be borrowed at ``now``, and a short description."""
    if not cluster.windows:
        return True, "always"
    zone = zoneinfo.ZoneInfo(cluster.timezone) if cluster.timezone else None
    local = (now or dt.datetime.now(dt.timezone.utc)).astimezone(zone)
    spans = ", ".join(cluster.windows) + (f" {cluster.timezone}" if cluster.timezone else "")
    is_open = any(w.contains(local.time()) for w in windows_of(cluster))
    return is_open, f"{'open' if is_open else 'closed'} ({spans}; now {local:%H:%M:%S})"


def auth_headers(cluster: RayCluster) -> dict[str, str]:
    """The HTTP headers that authenticate to a Ray cluster with token auth (empty without a token).

    Raises:
        ClustersFileError: the named token file is unreadable or the named variable is unset.
    """
    token = None
    if cluster.token_env:
        token = os.environ.get(cluster.token_env)
        if not token:
            raise ClustersFileError([SpecIssue(key=f"clusters.{cluster.name}.token_env", message=f"environment variable '{cluster.token_env}' is not set (it should hold the cluster's token)")])
    elif cluster.token_file or not os.environ.get("RAY_AUTH_TOKEN"):
        path = os.path.expanduser(cluster.token_file or "~/.ray/auth_token")
        try:
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            if cluster.token_file:
                raise ClustersFileError([SpecIssue(key=f"clusters.{cluster.name}.token_file", message=f"cannot read token file {path}: {exc.strerror}")]) from exc
    else:
        token = os.environ["RAY_AUTH_TOKEN"]
    return {"Authorization": f"Bearer {token}"} if token else {}


def _issue(key: tuple, message: str, lines: LineMap, file: str | None, hint: str | None = None) -> SpecIssue:
    line, col = lines.get(key) or lines.get(key[:-1]) or (None, None)
    return SpecIssue(key=format_path(key), message=message, file=file, line=line, col=col, hint=hint)


def _check_entry(i: int, entry: Any, lines: LineMap, file: str | None) -> tuple[Cluster | None, list[SpecIssue]]:
    where = ("clusters", i)
    if not isinstance(entry, dict):
        return None, [_issue(where, "a cluster must be a mapping with name and kind", lines, file)]
    kind = entry.get("kind")
    if kind not in KINDS:
        msg = "required key is missing" if kind is None else f"unknown cluster kind {kind!r}"
        hint = _hint(str(kind), sorted(KINDS)) if kind is not None else None
        return None, [_issue((*where, "kind"), f"{msg} (expected one of: {', '.join(sorted(KINDS))})", lines, file, hint)]
    model = KINDS[kind]
    what = f"cluster '{entry['name']}'" if isinstance(entry.get("name"), str) else "a cluster"
    try:
        cluster = model.model_validate(entry)
    except pydantic.ValidationError as exc:
        return None, _issues_from_validation(exc, model, where, lines, file, what=what)
    issues = [
        _issue((*where, "windows", j), f"invalid window {text!r} (expected 'HH:MM-HH:MM' with different ends, e.g. '22:00-08:00')", lines, file)
        for j, text in enumerate(cluster.windows)
        if parse_window(text) is None
    ]
    if cluster.timezone is not None and cluster.timezone not in zoneinfo.available_timezones():
        issues.append(_issue((*where, "timezone"), f"unknown time zone {cluster.timezone!r} (expected an IANA name such as Europe/Berlin)", lines, file,
                             _hint(cluster.timezone, sorted(zoneinfo.available_timezones()))))
    if isinstance(cluster, RayCluster) and not re.match(r"^https?://[^/\s]+", cluster.address):
        issues.append(_issue((*where, "address"), f"not an HTTP address: {cluster.address!r} (expected the dashboard, e.g. http://10.0.0.5:8265)", lines, file))
    return cluster, issues


def parse_clusters(data: Any, *, file: str | None = None, lines: LineMap | None = None, environ: dict[str, str] | None = None) -> Fleet:
    """Validate a loaded clusters file and return the fleet.

    Raises:
        ClustersFileError: listing every problem at once.
    """
    lines = lines or {}
    if not isinstance(data, dict):
        raise ClustersFileError([SpecIssue(key="", message="a clusters file must be a mapping with a 'clusters' list", file=file, line=1, col=1)])
    data, missing = substitute_env(data, environ)
    issues = [_issue(p, f"environment variable '{name}' is not set (use ${{{name}:-default}} for a default)", lines, file) for p, name in missing]
    try:
        top = _File.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ClustersFileError(issues + _issues_from_validation(exc, _File, (), lines, file, what="the clusters file")) from exc
    clusters: list[Cluster] = []
    seen: set[str] = set()
    for i, entry in enumerate(top.clusters):
        cluster, more = _check_entry(i, entry, lines, file)
        issues += more
        if cluster is not None and cluster.name in seen:
            issues.append(_issue(("clusters", i, "name"), f"cluster name {cluster.name!r} is used twice (names must be unique)", lines, file))
        elif cluster is not None:
            seen.add(cluster.name)
            clusters.append(cluster)
    if not top.clusters:
        issues.append(_issue(("clusters",), "no clusters listed (expected at least one entry with name and kind)", lines, file))
    if issues:
        issues.sort(key=lambda s: (s.line or 0, s.col or 0))
        raise ClustersFileError(issues)
    return Fleet(clusters=tuple(clusters), watch=top.watch, file=file)


def load_clusters(path: str | None = None) -> Fleet:
    """Read and validate a clusters file (default: ``$DATAFLOW_CLUSTERS``).

    Raises:
        ClustersFileError: no file given, unreadable, not YAML, or invalid.
    """
    path = path or os.environ.get("DATAFLOW_CLUSTERS")
    if not path:
        raise ClustersFileError([SpecIssue(key="", file="--clusters", message="no clusters file (pass --clusters FILE or set DATAFLOW_CLUSTERS)")])
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ClustersFileError([SpecIssue(key="", message=f"cannot read clusters file: {exc.strerror}", file=path)]) from exc
    try:
        data, lines = load(text, file=path)
    except PipelineSpecError as exc:
        raise ClustersFileError(exc.issues) from exc
    return parse_clusters(data, file=path, lines=lines)
