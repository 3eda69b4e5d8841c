"""The input fingerprint comes from the listing's entries, and a resume still sees a changed input."""
from __future__ import annotations

import os

import fsspec
import pytest

from dataflow.runtime.shards import ShardCutter, ShardFeed
from dataflow.runtime.progress import Progress, Shard


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.jsonl").write_text(f'{{"n": {i}}}\n')
    return folder


def _fingerprint(folder) -> str:
    from dataflow.dsl.spec import SourceSpec

    cutter = ShardCutter(2)
    for _ in ShardFeed.of_source(SourceSpec(uri=str(folder), format="jsonl"), {}).waves(cutter):
        pass
    return cutter.fingerprint


def test_an_unchanged_input_keeps_its_fingerprint(src):
    assert _fingerprint(src) == _fingerprint(src)


def test_a_size_change_changes_the_fingerprint(src):
    before = _fingerprint(src)
    stat = os.stat(src / "f3.jsonl")
    (src / "f3.jsonl").write_text('{"n": 33}\n')
    os.utime(src / "f3.jsonl", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: only the size tells
    assert _fingerprint(src) != before


def test_a_modification_time_change_changes_the_fingerprint(src):
    before = _fingerprint(src)
    stat = os.stat(src / "f1.jsonl")
    os.utime(src / "f1.jsonl", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # same size, newer
    assert _fingerprint(src) != before


def test_a_new_input_changes_the_fingerprint(src):
    before = _fingerprint(src)
    (src / "f9.jsonl").write_text('{"n": 9}\n')
    assert _fingerprint(src) != before


def test_the_fingerprint_asks_no_metadata_per_file(src, monkeypatch):
    fs = fsspec.filesystem("file")
    calls = []
    info = type(fs).info
    monkeypatch.setattr(type(fs), "info", lambda self, path, **kw: calls.append(path) or info(self, path, **kw))
    _fingerprint(src)
    asked = [c for c in calls if isinstance(c, str) and c.endswith(".jsonl")]  # the listing's own stat of each entry is not a request
    assert asked == [], f"the fingerprint asked for each input's metadata again: {asked}"


def test_a_resume_over_a_changed_input_starts_over(src, tmp_path):
    fs = fsspec.filesystem("file")
    progress = Progress(fs, str(tmp_path / "out"))
    state = {"pipeline_hash": "p", "input_fingerprint": _fingerprint(src), "shards": 1}
    progress.begin(state)
    shard = Shard(0, 1, ("a",))
    progress.stage(shard, str(tmp_path / "tmp"), [], phase="map", run_id="r1")
    assert progress.begin(state)[0].keys() == {shard.id}  # same inputs: the shard is kept
    stat = os.stat(src / "f0.jsonl")
    os.utime(src / "f0.jsonl", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    done, note = progress.begin({**state, "input_fingerprint": _fingerprint(src)})
    assert done == {} and "inputs changed" in note
