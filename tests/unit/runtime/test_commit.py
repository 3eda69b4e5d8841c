"""Atomic commit on a real local filesystem: modes, manifest, _SUCCESS last, errors kept."""
from __future__ import annotations

import json

import pytest

from connectors.registry import filesystem
from dataflow.errors import SinkExistsError
from dataflow.runtime.commit import SinkLayout, commit_output, read_manifest
from dataflow.runtime.progress import StagedFile


def _stage(fs, layout, name, rows=3, error=False):
    path = f"{layout.tmp_data}/{name}"
    with fs.open(path, "wb") as f:
        f.write(b"x" * rows)
    if error:
        with fs.open(f"{layout.tmp_errors}/e.jsonl", "wb") as f:
            f.write(b'{"source": "a", "op": "o", "error_type": "E", "reason": "r"}\n')
    return StagedFile(path, name, rows, rows)


def _commit(fs, layout, mode, files):
    return commit_output(fs, layout, mode, files, [layout.tmp_errors], {"pipeline": "p"})


def test_commit_publishes_files_manifest_and_success(tmp_path):
    fs = filesystem(str(tmp_path))
    layout = SinkLayout(str(tmp_path / "sink"), "run1")
    w = _stage(fs, layout, "part-a.parquet", error=True)
    _commit(fs, layout, "error", [w])
    root = tmp_path / "sink"
    assert sorted(p.name for p in root.iterdir()) == ["_SUCCESS", "_errors", "_manifest.json", "part-a.parquet"]
    manifest = json.loads((root / "_manifest.json").read_text())
    assert manifest["files"] == [{"path": "part-a.parquet", "rows": 3, "bytes": 3, "run_id": "run1"}]
    assert manifest["errors"] == ["_errors/run1-00000-e.jsonl"]
    assert read_manifest(fs, layout)["pipeline"] == "p"


def test_error_mode_refuses_committed_sink_and_names_other_modes(tmp_path):
    fs = filesystem(str(tmp_path))
    root = str(tmp_path / "sink")
    _commit(fs, SinkLayout(root, "r1"), "error", [_stage(fs, SinkLayout(root, "r1"), "part-a")])
    with pytest.raises(SinkExistsError, match="'overwrite'.*'append'"):
        _commit(fs, SinkLayout(root, "r2"), "error", [_stage(fs, SinkLayout(root, "r2"), "part-b")])


def test_overwrite_replaces_and_append_adds(tmp_path):
    fs = filesystem(str(tmp_path))
    root = tmp_path / "sink"
    _commit(fs, SinkLayout(str(root), "r1"), "error", [_stage(fs, SinkLayout(str(root), "r1"), "part-r1", error=True)])
    _commit(fs, SinkLayout(str(root), "r2"), "append", [_stage(fs, SinkLayout(str(root), "r2"), "part-r2")])
    assert [f["path"] for f in json.loads((root / "_manifest.json").read_text())["files"]] == ["part-r1", "part-r2"]
    _commit(fs, SinkLayout(str(root), "r3"), "overwrite", [_stage(fs, SinkLayout(str(root), "r3"), "part-r3")])
    assert sorted(p.name for p in root.iterdir()) == ["_SUCCESS", "_errors", "_manifest.json", "part-r3"]
    assert list((root / "_errors").iterdir()) == []
    assert not (root / "_tmp").exists()


def test_success_is_written_last_after_data_and_manifest(tmp_path, monkeypatch):
    fs = filesystem(str(tmp_path))
    layout = SinkLayout(str(tmp_path / "sink"), "run1")
    files = [_stage(fs, layout, "part-a.parquet"), _stage(fs, layout, "part-b.parquet", error=True)]
    events: list[str] = []
    real_mv, real_open = fs.mv, fs.open

    def mv(src, dst, *args, **kwargs):
        events.append(f"mv {dst.rsplit('/', 1)[-1]}")
        return real_mv(src, dst, *args, **kwargs)

    def open_(path, mode="rb", *args, **kwargs):
        if "w" in mode:
            events.append(f"write {path.rsplit('/', 1)[-1]}")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(fs, "mv", mv)
    monkeypatch.setattr(fs, "open", open_)
    _commit(fs, layout, "error", files)
    assert events[-2:] == ["mv _manifest.json", "write _SUCCESS"]
    assert {"mv part-a.parquet", "mv part-b.parquet", "mv run1-00000-e.jsonl"} <= set(events[: events.index("mv _manifest.json")])
