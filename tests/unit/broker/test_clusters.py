"""clusters.yaml: validation with line numbers and did-you-mean, windows, tokens."""
from __future__ import annotations

import datetime as dt

import pytest

from dataflow.broker.clusters import ClustersFileError, RayCluster, auth_headers, load_clusters, parse_window, window_state

GOOD = """\
clusters:
  - name: train-a
    kind: ray
    address: http://10.0.0.5:8265
    windows: ["22:00-08:00"]
    timezone: Europe/Berlin
    reserve: {num_cpus: 8, num_gpus: 0}
    max_share: 0.5
    priority: 10
  - name: k8s-b
    kind: kubernetes
    context: prod-b
    namespace: data
    queue: data-borrow
"""


def _load(tmp_path, text):
    path = tmp_path / "clusters.yaml"
    path.write_text(text)
    return load_clusters(str(path))


def test_issue_example_parses_with_defaults(tmp_path):
    fleet = _load(tmp_path, GOOD)
    a, b = fleet.clusters
    assert (a.kind, a.reserve.num_cpus, a.max_share, a.priority, a.timezone) == ("ray", 8, 0.5, 10, "Europe/Berlin")
    assert (b.kind, b.windows, b.max_share, b.priority, b.reserve.num_cpus, b.queue) == ("kubernetes", [], 1.0, 0, 0, "data-borrow")
    assert fleet.watch.poll_seconds == 5 and fleet.get("k8s-b") is b and fleet.get("nope") is None


def test_every_problem_is_reported_with_its_line_and_a_suggestion(tmp_path):
    text = GOOD.replace("    address: http://10.0.0.5:8265", "    adress: http://10.0.0.5:8265").replace("kind: kubernetes", "kind: kubernets")
    text = text.replace('windows: ["22:00-08:00"]', 'windows: ["22:00-08:00", "25:00-26:00"]').replace("max_share: 0.5", "max_share: 1.5")
    text = text.replace("timezone: Europe/Berlin", "timezone: Europe/Berlim")
    with pytest.raises(ClustersFileError) as err:
        _load(tmp_path, text)
    issues = {i.key: i for i in err.value.issues}
    assert issues["clusters[0].adress"].line == 4 and issues["clusters[0].adress"].hint == "did you mean 'address'?"
    assert "unknown key of cluster 'train-a'" in issues["clusters[0].adress"].message
    assert issues["clusters[0].address"].message == "required key is missing"
    assert issues["clusters[0].max_share"].line == 8
    assert issues["clusters[1].kind"].line == 11 and issues["clusters[1].kind"].hint == "did you mean 'kubernetes'?"
    # Only pydantic's errors are reported for an entry it rejects; its window and zone are checked once it is valid.
    assert "clusters[0].windows[1]" not in issues
    lines = str(err.value).splitlines()
    assert lines[0] == f"{tmp_path / 'clusters.yaml'}:2:5: clusters[0].address: required key is missing"  # at the entry
    assert lines[1].startswith(f"{tmp_path / 'clusters.yaml'}:4:5: clusters[0].adress: unknown key of cluster 'train-a' (expected one of: address,")


def test_windows_zones_addresses_and_duplicate_names_are_checked(tmp_path):
    text = GOOD.replace('windows: ["22:00-08:00"]', 'windows: ["22:00-08:00", "25:00-26:00", "10:00-10:00"]')
    text = text.replace("timezone: Europe/Berlin", "timezone: Europe/Berlim").replace("http://10.0.0.5:8265", "10.0.0.5:8265")
    text = text.replace("name: k8s-b", "name: train-a")
    with pytest.raises(ClustersFileError) as err:
        _load(tmp_path, text)
    issues = {i.key: i for i in err.value.issues}
    assert issues["clusters[0].windows[1]"].line == 5 and "invalid window '25:00-26:00'" in issues["clusters[0].windows[1]"].message
    assert "clusters[0].windows[2]" in issues  # an empty span
    assert issues["clusters[0].timezone"].hint == "did you mean 'Europe/Berlin'?"
    assert "not an HTTP address" in issues["clusters[0].address"].message
    assert issues["clusters[1].name"].line == 10 and "used twice" in issues["clusters[1].name"].message


def test_missing_file_env_var_and_empty_fleet_are_spec_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("DATAFLOW_CLUSTERS", raising=False)
    with pytest.raises(ClustersFileError, match="pass --clusters FILE or set DATAFLOW_CLUSTERS"):
        load_clusters(None)
    with pytest.raises(ClustersFileError, match="cannot read clusters file"):
        load_clusters(str(tmp_path / "absent.yaml"))
    monkeypatch.delenv("TRAIN_A", raising=False)
    with pytest.raises(ClustersFileError) as err:
        _load(tmp_path, GOOD.replace("http://10.0.0.5:8265", "${TRAIN_A}"))
    assert err.value.issues[0].key == "clusters[0].address" and "'TRAIN_A' is not set" in err.value.issues[0].message
    with pytest.raises(ClustersFileError, match="no clusters listed"):
        _load(tmp_path, "clusters: []\n")
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [("22:00-08:00", ["23:59:59", "00:00:00", "07:59:59", "22:00:00"], ["08:00:00", "12:00:00", "21:59:59"]),
     ("09:00:30-09:00:45", ["09:00:30", "09:00:44"], ["09:00:29", "09:00:45"])],
    ids=["past-midnight", "seconds"],
)
def test_window_contains(text, inside, outside):
    window = parse_window(text)
    assert all(window.contains(dt.time.fromisoformat(t)) for t in inside)
    assert not any(window.contains(dt.time.fromisoformat(t)) for t in outside)


def test_window_state_is_evaluated_in_the_cluster_time_zone():
    cluster = RayCluster(name="a", kind="ray", address="http://x:1", windows=["22:00-08:00"], timezone="Asia/Tokyo")
    noon_utc = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)  # 21:00 in Tokyo
    assert window_state(cluster, noon_utc) == (False, "closed (22:00-08:00 Asia/Tokyo; now 21:00:00)")
    assert window_state(cluster, noon_utc + dt.timedelta(hours=1))[0] is True
    assert window_state(RayCluster(name="b", kind="ray", address="http://x:1"), noon_utc) == (True, "always")


def test_auth_headers_from_token_file_env_or_nothing(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    assert auth_headers(RayCluster(name="a", kind="ray", address="http://x:1", token_file=str(token))) == {"Authorization": "Bearer s3cret"}
    monkeypatch.setenv("A_TOKEN", "from-env")
    assert auth_headers(RayCluster(name="a", kind="ray", address="http://x:1", token_env="A_TOKEN")) == {"Authorization": "Bearer from-env"}
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    assert auth_headers(RayCluster(name="a", kind="ray", address="http://x:1")) == {}
    with pytest.raises(ClustersFileError, match="cannot read token file") as err:
        auth_headers(RayCluster(name="a", kind="ray", address="http://x:1", token_file=str(tmp_path / "missing")))
    assert "s3cret" not in str(err.value)
