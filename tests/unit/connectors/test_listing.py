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


def test_default_image_extensions_match_any_case(tmp_path):
    for name in ["A.JPG", "b.Jpeg", "c.PNG", "d.webp", "e.TIFF", "f.gif", "g.bmp", "h.tif", "i.txt", "j.JPG.bak", "noext"]:
        (tmp_path / name).write_bytes(b"x")
    assert _names(list_files(str(tmp_path), "image", {}), tmp_path) == [
        "A.JPG", "b.Jpeg", "c.PNG", "d.webp", "e.TIFF", "f.gif", "g.bmp", "h.tif"]


@pytest.mark.parametrize(
    "extensions, expected",
    [
        ([".PNG", "raw"], ["b.png", "c.RAW"]),
        ("png", ["b.png"]),
        ("*", ["a.JPG", "b.png", "c.RAW", "d.txt"]),
    ],
    ids=["list-with-dots-and-case", "one-name", "every-file"],
)
def test_extensions_option_overrides_the_default_list(tmp_path, extensions, expected):
    for name in ["a.JPG", "b.png", "c.RAW", "d.txt"]:
        (tmp_path / name).write_bytes(b"x")
    assert _names(list_files(str(tmp_path), "image", {"extensions": extensions}), tmp_path) == expected


def test_an_extension_filter_matching_nothing_says_how_to_change_it(tmp_path):
    (tmp_path / "a.JPG").write_bytes(b"x")
    with pytest.raises(ConnectorError, match="holds no file with extension heic .*source.options.extensions"):
        list_files(str(tmp_path), "image", {"extensions": ["HEIC"]})


def test_a_committed_sink_lists_only_what_its_manifest_names(tmp_path):
    """Parts of a run still in flight sit beside committed ones on object stores; readers trust the manifest."""
    for name in ["part-aa-0.parquet", "part-bb-0.parquet", "files-aa-0/x.jpg", "files-bb-0/y.jpg"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "_manifest.json").write_text('{"files": [{"path": "part-aa-0.parquet"}, {"path": "files-aa-0/"}]}')
    assert _names(list_files(str(tmp_path), "binary", {}), tmp_path) == ["files-aa-0/x.jpg", "part-aa-0.parquet"]
    (tmp_path / "_manifest.json").write_text("{not json")
    with pytest.raises(ConnectorError, match="_manifest.json is not valid JSON"):
        list_files(str(tmp_path), "binary", {})
