"""dataflow.lineage: the fragments readers and ops really write are taken off a source, a file's own ``#`` is not."""
from __future__ import annotations

import io
import re
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dataflow
from connectors.formats import BadRecord
from connectors.formats.lines import read_text_blocks
from connectors.formats.typed_jsonl import read_typed_jsonl, read_typed_jsonl_blocks
from connectors.formats.webdataset import read_shard
from connectors.registry import line_reader
from dataflow.lineage import KEY, LINE, MATCH, OFFSET, ROW, TIME, WINDOW, strip_fragments
from dataflow.ops.audio.decode import decode_audio
from dataflow.ops.audio.segment_vad import segment_audio_vad
from dataflow.ops.table.join import join_tables
from dataflow.ops.table.named import bind_tables
from dataflow.ops.table.window_aggregate import window_aggregate
from dataflow.runtime.routes import input_key
from examples.generate_audio import encode, speech_clip

_NAMES = ["logs#part=1", "x#key=a", "y#line=2x", "z#t=1"]  # legal names that end like a fragment
_FRAGMENT = re.compile(r"#[a-z_]+=")


def _sources(records) -> list[str]:
    rows = [r for r in records if not isinstance(r, pa.Table)] + [row for t in records if isinstance(t, pa.Table) for row in t.to_pylist()]
    return [r.source if isinstance(r, BadRecord) else r["__source__"] for r in rows]


def _written(path: str, sources: list[str]) -> set[str]:
    """The first fragment of each source after ``path``; every source must strip back to ``path``."""
    assert sources and all(s.startswith(path) and s != path for s in sources)
    assert {strip_fragments(s) for s in sources} == {path}
    assert set(input_key(sources)) == {path}  # the routes' vectorised path agrees
    return {_FRAGMENT.match(s[len(path):]).group() for s in sources}


@pytest.mark.parametrize("name", _NAMES, ids=["part", "key", "line", "t"])
def test_line_readers_fragments_are_stripped(tmp_path, name):
    """Each line reader, on a clean file (the vectorised paths) and on one with bad lines (row errors)."""
    path = str(tmp_path / f"{name}.jsonl")
    typed = {"schema": {"a": "int"}}
    readers = [(line_reader("text"), {"split": "line"}), (read_text_blocks, {}), (line_reader("jsonl"), {}), (line_reader("csv"), {}), (read_typed_jsonl, typed), (read_typed_jsonl_blocks, typed)]
    sources = [s for data in (b'{"a": 1}\n{"a": 2}\n', b'{"a": 1}\nnot json\n{"a": "\xff"}\n') for read, options in readers for s in _sources(list(read(path, io.BytesIO(data), options)))]
    assert _written(path, sources) == {LINE}


@pytest.mark.parametrize("name", _NAMES, ids=["part", "key", "line", "t"])
def test_webdataset_key_and_offset_fragments_are_stripped(tmp_path, name):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for member, data in [("a.jpg", b"J"), ("dir.d/s01.seg.jpg", b"S"), ("c#d.jpg", b"C"), ("e#line=5%23.jpg", b"E"), ("b.jpg", b"B")]:
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    cut = [m.offset for m in tarfile.open(fileobj=io.BytesIO(buf.getvalue()))][4] + 100  # inside the last member's header
    path = str(tmp_path / f"{name}.tar")
    records = list(read_shard(path, io.BytesIO(buf.getvalue()[:cut]), {}))
    assert _written(path, _sources(records)) == {KEY, OFFSET}
    # A key's own "#" is percent-encoded in its fragment (the key column keeps it as named).
    keys = {r["__key__"]: r["__source__"][len(path):] for r in records if not isinstance(r, BadRecord)}
    assert keys["c#d"] == "#key=c%23d" and keys["e#line=5%23"] == "#key=e%23line=5%2523"


def test_parquet_row_fragments_are_stripped(tmp_path):
    path = tmp_path / "t#part=1.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path, row_group_size=2)
    rows = dataflow.read(str(path), format="parquet").preview(n=3).rows
    assert _written(str(path), [r["__source__"] for r in rows]) == {ROW}


def test_join_and_window_fragments_are_stripped_after_the_readers():
    """table.join's match rank and table.window_aggregate's window starts as the ops write them (integer seconds, negative before 1970)."""
    file = "s3://b/logs#part=1.jsonl"
    left = pa.table({"__source__": [f"{file}{LINE}1", f"{file}{LINE}2"], "k": [1, 2], "ts": [-7.5, 1799.25]})
    with bind_tables(labels=pa.table({"__source__": ["r1", "r2"], "k": [1, 1]})):
        joined = join_tables(left, right="labels", keys=["k"], how="inner").column("__source__").to_pylist()
    windows = window_aggregate(left, size=3600, slide=1800, aggregations={"n": "count(*)"}).column("__source__").to_pylist()
    assert sorted(s[len(file):] for s in joined) == [f"{LINE}1{MATCH}1", f"{LINE}1{MATCH}2"]
    assert sorted(s[len(file):] for s in windows) == [f"{LINE}1{WINDOW}-1800", f"{LINE}1{WINDOW}-3600", f"{LINE}2{WINDOW}0"]
    assert {strip_fragments(s) for s in joined + windows} == {file}
    assert set(input_key(joined + windows)) == {"b/logs#part=1.jsonl"}


def test_segment_time_fragments_are_stripped():
    clip = decode_audio({"bytes": encode(speech_clip(2, 16000, 0), 16000, "FLAC"), "__source__": "s3://b/clip#t=1.flac"})
    segments = [s["__source__"] for s in segment_audio_vad(clip)]
    assert len(segments) == 2 and all(TIME in s[len("s3://b/clip#t=1.flac"):] for s in segments)
    assert {strip_fragments(s) for s in segments} == {"s3://b/clip#t=1.flac"}


def test_a_hash_of_the_file_name_or_an_unknown_fragment_stays():
    assert strip_fragments("/d/logs#part=1.jsonl#line=3") == "/d/logs#part=1.jsonl"
    assert strip_fragments("/d/x#key=a.tar#key=dir.d/s01#match=3") == "/d/x#key=a.tar"
    assert strip_fragments("memory:arrow#row=4") == "memory:arrow"
    for kept in ("/d/logs#part=1.jsonl", "/d/a#line=x", "/d/t#t=1,2", "/d/p#page=2"):
        assert strip_fragments(kept) == kept


def test_written_names_keep_a_files_own_hash_part(tmp_path):
    """The files and WebDataset sinks name a row after its source file, fragments off and the file's own ``#`` kept (made safe)."""
    from connectors.formats.files import FilesFormat
    from connectors.formats.webdataset import WebDatasetFormat
    from connectors.registry import filesystem

    cols = {"__source__": np.array(["in/logs#part=1.png#row=3"], dtype=object), "bytes": np.array([b"P"], dtype=object)}
    [image, _] = FilesFormat.write(filesystem(str(tmp_path)), str(tmp_path / "files"), cols, {"extension": "png"})
    assert image.path.rsplit("/", 1)[1].startswith("logs_part_1-")
    [shard, *_] = WebDatasetFormat.write(filesystem(str(tmp_path)), str(tmp_path / "shard.tar"), {**cols, "format": np.array(["png"], dtype=object)}, {})
    members = tarfile.open(shard.path).getnames()  # the image and its metadata (.json)
    assert any(m.endswith(".png") for m in members) and all(m.startswith("logs_part_1-") for m in members), members
