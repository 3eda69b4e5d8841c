"""Source listing on real files: recursion, globs, include/exclude, size filters, ignore_missing."""
from __future__ import annotations

import pytest

from connectors.registry import list_files
from dataflow.errors import ConnectorError


@pytest.fixture
def tree(tmp_path):
    for name, size in [("a/1.jpg", 10), ("a/b/2.png", 100), ("3.jpg", 1000), ("_tmp/4.jpg", 5), ("a/.hidden.jpg", 3), ("notes.txt", 1)]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    return tmp_path


def _names(uris, root):
    return [u[len(str(root)) + 1 :] for u in uris]


def test_recursive_listing_skips_hidden_and_other_extensions(tree):
    assert _names(list_files(str(tree), "image", {}), tree) == ["3.jpg", "a/1.jpg", "a/b/2.png"]
    assert _names(list_files(str(tree), "image", {"recursive": False}), tree) == ["3.jpg"]


def test_glob_and_patterns(tree):
    assert _names(list_files(f"{tree}/*.jpg", "image", {}), tree) == ["3.jpg"]
    assert _names(list_files(str(tree), "image", {"include": ["a/*"], "exclude": ["a/b/*"]}), tree) == ["a/1.jpg"]


def test_size_filters_take_bytes_or_sizes(tree):
    assert _names(list_files(str(tree), "image", {"min_size": 50}), tree) == ["3.jpg", "a/b/2.png"]
    assert _names(list_files(str(tree), "image", {"max_size": "0.5KB"}), tree) == ["a/1.jpg", "a/b/2.png"]
    with pytest.raises(ConnectorError, match="source.options.min_size: expected a size"):
        list_files(str(tree), "image", {"min_size": "big"})
    with pytest.raises(ConnectorError, match="within source.options.min_size/max_size"):
        list_files(str(tree), "image", {"min_size": "1MB"})


def test_missing_source_fails_unless_ignore_missing(tree):
    with pytest.raises(ConnectorError, match="does not exist .*ignore_missing"):
        list_files(str(tree / "nope"), "image", {})
    assert list_files(str(tree / "nope"), "image", {"ignore_missing": True}) == []
    assert list_files(str(tree), "audio", {"ignore_missing": True}) == []
