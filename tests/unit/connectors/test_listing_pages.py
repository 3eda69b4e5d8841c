"""The paged local listing: sorted pages equal to the whole listing, whatever the tree and the page size."""
from __future__ import annotations

import shutil
import tempfile

import fsspec
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.listing import _candidates, list_pages, list_source, page_size
from tests.trees import PART, write_tree

@settings(max_examples=60, deadline=None)
@given(paths=st.lists(st.lists(PART, min_size=1, max_size=3), max_size=25), page=st.integers(1, 7), recursive=st.booleans())
def test_pages_in_order_equal_the_fsspec_listing(paths, page, recursive):
    root = tempfile.mkdtemp()
    try:
        write_tree(root, paths)
        fs = fsspec.filesystem("file")
        pages = list(list_pages(fs, root, root, "binary", {"recursive": recursive, "ignore_missing": True}, page=page))
        got = [(u, i["size"], i["mtime"]) for p in pages for u, i in p.entries]
        assert all(len(p.entries) <= page for p in pages)
        want = [(p, i["size"], i["mtime"]) for p, i in (_candidates(fs, root, root, recursive) or ([], ""))[0]]
        assert got == want == sorted(want)
    finally:
        shutil.rmtree(root)


def test_the_whole_listing_is_its_pages_and_the_skips_add_up(tmp_path, monkeypatch):
    for i in range(7):
        (tmp_path / f"f{i}.jsonl").write_text("{}\n")
        (tmp_path / f"n{i}.txt").write_text("x")
    fs = fsspec.filesystem("file")
    monkeypatch.setenv("DATAFLOW_LISTING_PAGE", "3")
    assert page_size() == 3
    pages = list(list_pages(fs, str(tmp_path), str(tmp_path), "jsonl", {}))
    assert [len(p.entries) for p in pages] == [3, 3, 1] and sum(p.skipped.get(".txt", 0) for p in pages) == 7
    whole = list_source(fs, str(tmp_path), str(tmp_path), "jsonl", {})
    assert whole.entries == [e for p in pages for e in p.entries] and whole.skipped == {".txt": 7}


def test_a_bad_page_size_names_the_variable(monkeypatch):
    import pytest

    from dataflow.errors import ConnectorError

    monkeypatch.setenv("DATAFLOW_LISTING_PAGE", "0")
    with pytest.raises(ConnectorError, match="DATAFLOW_LISTING_PAGE"):
        page_size()
