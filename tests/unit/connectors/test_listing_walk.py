"""The parallel listing: worker processes (local) and threads (other filesystems) give exactly the serial listing."""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.extensions import ExtensionFilter
from connectors.listing import _candidates, list_source
from connectors.walk import LocalTree, RemoteTree
from tests.trees import PART, workers_scanned, write_tree

_TREES = st.lists(st.lists(PART, min_size=1, max_size=4), max_size=30)
_KEEP = ExtensionFilter(frozenset({"a", "b"}), "jsonl")  # half the drawn names have another extension: counted as skipped


def _local(root, workers, keep=_KEEP):
    tree = LocalTree(keep, True, None, len(root) + 1, workers=workers, parallel_after=0)
    with tree.walk(root) as walk:
        batches = list(walk)
    return [(p, i["size"], i["mtime"]) for entries, _ in batches for p, i in entries], [s for _, skipped in batches for s in skipped.items()]


@settings(max_examples=40, deadline=None)
@given(paths=_TREES, empty=st.lists(st.lists(PART, min_size=1, max_size=3), max_size=4))
def test_worker_processes_list_a_local_tree_exactly_as_the_serial_walk(paths, empty):
    root = tempfile.mkdtemp()
    try:
        write_tree(root, paths, empty)
        serial, serial_skips = _local(root, 1)
        parallel, parallel_skips = _local(root, 2)
        want = [(p, i["size"], i["mtime"]) for p, i in (_candidates(fsspec.filesystem("file"), root, root, True) or ([], ""))[0]
                if _KEEP.skip(os.path.basename(p)) is None]
        assert parallel == serial == want
        assert sorted(parallel_skips) == sorted(serial_skips)
    finally:
        shutil.rmtree(root)


def test_a_small_tree_starts_no_worker_process(tmp_path):
    write_tree(str(tmp_path), [("a", "x.a"), ("b", "y.a")])
    tree = LocalTree(_KEEP, True, None, len(str(tmp_path)) + 1, workers=2)
    with tree.walk(str(tmp_path)) as batches:
        assert [p for entries, _ in batches for p, _ in entries] == [f"{tmp_path}/a/x.a", f"{tmp_path}/b/y.a"]
    assert tree._pool is None


def test_a_symlink_loop_fails_the_parallel_walk_as_the_serial_one_after_the_same_files(tmp_path):
    write_tree(str(tmp_path), [("a", "1.a"), ("b", "2.a"), ("c", "3.a")])
    os.symlink(tmp_path / "b" / "loop.a", tmp_path / "b" / "loop.a")
    failures = []
    for workers in (1, 2):
        tree = LocalTree(_KEEP, True, None, len(str(tmp_path)) + 1, workers=workers, parallel_after=0)
        got = []
        with pytest.raises(OSError) as caught, tree.walk(str(tmp_path)) as batches:
            for entries, _ in batches:
                got += [p for p, _ in entries]
        failures.append((got, type(caught.value), str(caught.value)))
    assert failures[0] == failures[1] == ([f"{tmp_path}/a/1.a"], OSError, f"[Errno 40] Too many levels of symbolic links: '{tmp_path}/b/loop.a'")


def _walk_until_error(root, workers):
    tree = LocalTree(ExtensionFilter(frozenset(), "binary"), True, None, len(root) + 1, workers=workers, parallel_after=0)
    got = []
    with pytest.raises(OSError) as caught, tree.walk(root) as batches:
        for entries, _ in batches:
            got += [p for p, _ in entries]
    return got, type(caught.value), str(caught.value)


def test_a_subfolder_too_deep_to_open_fails_the_parallel_walk_as_the_serial_one(tmp_path):
    """A folder the walk cannot open, even as root: its path is longer than PATH_MAX."""
    write_tree(str(tmp_path), [("a", "1"), ("c", "3")])
    fd, deep = os.open(tmp_path, os.O_RDONLY), str(tmp_path / "b")
    os.mkdir("b", dir_fd=fd)
    for _ in range(17):  # 17 x 256 characters: past PATH_MAX (4096)
        inner = os.open("b" if deep.endswith("/b") else "n" * 255, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
        os.mkdir("n" * 255, dir_fd=fd)
        deep += "/" + "n" * 255
    os.close(fd)
    serial, parallel = _walk_until_error(str(tmp_path), 1), _walk_until_error(str(tmp_path), 2)
    assert serial == parallel and serial[:2] == ([f"{tmp_path}/a/1"], OSError) and "File name too long" in serial[2]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_subfolder_fails_the_parallel_walk_as_the_serial_one(tmp_path):
    write_tree(str(tmp_path), [("a", "1"), ("b", "2"), ("c", "3")])
    (tmp_path / "b").chmod(0)
    try:
        serial, parallel = _walk_until_error(str(tmp_path), 1), _walk_until_error(str(tmp_path), 2)
    finally:
        (tmp_path / "b").chmod(0o755)
    assert serial == parallel == ([f"{tmp_path}/a/1"], PermissionError, f"[Errno 13] Permission denied: '{tmp_path}/b'")


@settings(max_examples=40, deadline=None)
@given(paths=_TREES)
def test_threads_list_another_filesystem_exactly_as_its_find(paths):
    fs = fsspec.filesystem("memory")
    root = f"/walk-{uuid.uuid4().hex}"
    try:
        for rel in paths:
            path = "/".join((root, *rel))
            if not any(fs.isfile("/".join((root, *rel[:i]))) for i in range(1, len(rel))) and not fs.isdir(path):
                fs.pipe_file(path, b"x" * len(rel))
        if not fs.exists(root):
            fs.mkdir(root)
        want = [(p, i["size"]) for p, i in _candidates(fs, root, root, True)[0] if _KEEP.skip(p.rsplit("/", 1)[-1]) is None]
        tree = RemoteTree(fs, _KEEP, root, None, workers=4)
        with tree.walk() as batches:
            assert [(p, i["size"]) for entries, _ in batches for p, i in entries] == want
    finally:
        fs.rm(root, recursive=True) if fs.exists(root) else None


def test_the_source_listing_of_another_filesystem_keeps_its_skips_and_hidden_folders_out():
    fs = fsspec.filesystem("memory")
    root = f"/walk-{uuid.uuid4().hex}"
    for rel in ["z.jsonl", "a/1.jsonl", "a/_tmp/2.jsonl", ".git/3.jsonl", "b/c/4.jsonl.gz", "b/5.txt", "a-b.jsonl"]:
        fs.pipe_file(f"{root}/{rel}", b"{}\n")
    listing = list_source(fs, f"memory://{root}", root, "jsonl", {})
    assert [u.split(root)[1] for u, _ in listing.entries] == ["/a-b.jsonl", "/a/1.jsonl", "/b/c/4.jsonl.gz", "/z.jsonl"]
    assert listing.skipped == {".txt": 1}
    fs.rm(root, recursive=True)


@pytest.fixture
def nested(tmp_path):
    """A source tree with nested and empty folders, hidden entries, other extensions, compressed files and sizes."""
    names = ["z.jsonl", "a-b.jsonl", "a/1.jsonl", "a/b/2.jsonl.gz", "a/_tmp/3.jsonl", "a/.x.jsonl", ".git/4.jsonl", "b/c/d/5.jsonl",
             "b/6.txt", "b/7.TXT.gz", "c/8.ndjson", "c/9.json", "e/f/10.jsonl"]  # fmt: skip
    for i, name in enumerate(names):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * i)
    (tmp_path / "e" / "empty").mkdir()
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "options",
    [{}, {"include": ["a/*", "c/*"], "exclude": ["a/b/*"]}, {"min_size": 3, "max_size": 11}, {"recursive": False}],
    ids=["defaults", "patterns", "sizes", "flat"],
)
def test_the_source_listing_with_worker_processes_is_the_serial_one(nested, monkeypatch, options):
    import connectors.listing as listing

    fs = fsspec.filesystem("file")
    monkeypatch.setattr(listing, "LOCAL_WORKERS", 1)
    serial = list_source(fs, str(nested), str(nested), "jsonl", options)
    scanned = workers_scanned(monkeypatch)
    assert list_source(fs, str(nested), str(nested), "jsonl", options) == serial
    assert serial.entries and serial.skipped == ({} if options.get("recursive") is False else {".txt": 1, ".txt.gz": 1})
    assert len(scanned) == (0 if options.get("recursive") is False else 11)  # every visible folder, the root too, in worker processes


def test_shards_cut_from_the_parallel_listing_have_the_serial_ids_and_fingerprint(nested, monkeypatch):
    import connectors.listing as listing
    from dataflow.dsl.spec import SourceSpec
    from dataflow.runtime.shards import ShardCutter, ShardFeed

    def cut():
        cutter = ShardCutter(2)
        shards = [s for wave in ShardFeed.of_source(SourceSpec(uri=str(nested), format="jsonl"), {}).waves(cutter) for s in wave]
        return [(s.index, s.digest, s.inputs) for s in shards], cutter.fingerprint

    monkeypatch.setattr(listing, "LOCAL_WORKERS", 1)
    serial = cut()
    scanned = workers_scanned(monkeypatch)
    assert cut() == serial and len(serial[0]) == 4 and scanned


def test_a_committed_sink_listed_with_worker_processes_keeps_to_its_manifest(nested, monkeypatch):
    import connectors.listing as listing

    (nested / "_manifest.json").write_text('{"files": [{"path": "a/"}, {"path": "z.jsonl"}, {"path": "b/6.txt"}]}')
    fs = fsspec.filesystem("file")
    monkeypatch.setattr(listing, "LOCAL_WORKERS", 1)
    serial = list_source(fs, str(nested), str(nested), "jsonl", {})
    scanned = workers_scanned(monkeypatch)
    assert list_source(fs, str(nested), str(nested), "jsonl", {}) == serial and scanned
    assert [u[len(str(nested)) + 1:] for u, _ in serial.entries] == ["a/1.jsonl", "a/b/2.jsonl.gz", "z.jsonl"] and serial.skipped == {".txt": 1}


def test_workers_slower_than_the_walk_alone_are_dropped_after_their_trial(tmp_path, monkeypatch):
    """Stand-in workers that take 50 ms a folder (a machine whose other cores are busy) lose to the walk alone."""
    import threading
    from concurrent.futures import Future

    import connectors.walk as walk

    write_tree(str(tmp_path), [(f"d{i:02d}", f"{j}.a") for i in range(30) for j in range(2)])
    scanned = []

    class Slow:
        def __init__(self, workers):
            pass

        def submit(self, folder):
            scanned.append(folder)
            future = Future()
            threading.Timer(0.05, lambda: future.set_result(walk.scan(folder))).start()
            return future

        def close(self):
            pass

    serial, _ = _local(str(tmp_path), 1)
    monkeypatch.setattr(walk, "ScanPool", Slow)
    tree = LocalTree(_KEEP, True, None, len(str(tmp_path)) + 1, workers=2, parallel_after=4)
    with tree.walk(str(tmp_path)) as batches:
        got = [(p, i["size"], i["mtime"]) for entries, _ in batches for p, i in entries]
    assert got == serial and tree.workers == 1 and 0 < len(scanned) < 30


@pytest.mark.parametrize("how", ["serial", "workers", "glob", "flat"])
def test_entries_no_reader_can_read_are_skipped_and_counted_never_listed(tmp_path, monkeypatch, how):
    """A broken symbolic link failed a run over a glob (FileNotFoundError in a read task) and vanished from a folder's
    listing without a word; a named pipe listed as a file would block its reader forever. Both are counted as skipped
    entries that are not regular files, on every listing path; a link to a file is read."""
    import connectors.listing as listing
    from connectors.extensions import describe_skipped
    from connectors.folder_scan import NOT_A_FILE

    (tmp_path / "ok.jsonl").write_bytes(b"{}\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "ok.jsonl")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere" / "x.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")
    fs = fsspec.filesystem("file")
    monkeypatch.setattr(listing, "LOCAL_WORKERS", 1)
    if how == "workers":
        workers_scanned(monkeypatch)
    uri = str(tmp_path / "*.jsonl") if how == "glob" else str(tmp_path)
    got = list_source(fs, uri, uri, "jsonl", {"recursive": how != "flat"})
    assert [u for u, _ in got.entries] == [str(tmp_path / "link.jsonl"), str(tmp_path / "ok.jsonl")]
    assert got.skipped == {NOT_A_FILE: 2}
    assert describe_skipped(got.skipped) == "2 entries that are not regular files (a broken symbolic link, a pipe or a socket)"
    (tmp_path / "ok.jsonl").unlink()  # now the link is broken too: nothing to read, and the error says why
    with pytest.raises(listing.ConnectorError, match=r"holds no file.*skipped: 3 entries that are not regular files"):
        list_source(fs, uri, uri, "jsonl", {"recursive": how != "flat"})
