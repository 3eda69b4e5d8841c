"""Scheme traits are declared on the storage classes and asked through the registry, never by scheme name."""
from __future__ import annotations

import pytest

from connectors.registry import STORAGE, filesystem, storage_traits
from connectors.storage.disk_cache import DiskCache
from connectors.storage.traits import REMOTE, StorageTraits


@pytest.mark.parametrize(("uri", "local", "cached", "rename"), [
    ("/data/x", True, False, True),
    ("file:///data/x", True, False, True),
    ("local:///data/x", True, False, True),
    ("memory://x", True, False, True),
    ("s3://bucket/x", False, True, False),
    ("s3a://bucket/x", False, True, False),
    ("webhdfs://nn:9870/x", False, True, True),
])
def test_traits_come_from_the_storage_class(uri, local, cached, rename):
    assert storage_traits(uri) == StorageTraits(is_local=local, read_through_cache=cached, atomic_rename=rename)


def test_every_listed_storage_class_of_ours_declares_its_traits():
    import importlib

    for scheme, entry in STORAGE.items():
        module, _, name = entry["class"].partition(":")
        if module.startswith("connectors.storage.") and scheme != "hdfs":  # hdfs imports pyarrow's HDFS bindings
            cls = getattr(importlib.import_module(module), name)
            assert {"is_local", "read_through_cache", "atomic_rename"} <= set(vars(cls)), scheme


def test_a_scheme_not_installed_here_reads_as_remote_storage():
    assert storage_traits("nosuchfs://bucket/x") == REMOTE


def test_the_cache_wraps_only_storage_that_reads_through_it(tmp_path):
    cache = {"dir": str(tmp_path / "cache")}
    assert not isinstance(filesystem(str(tmp_path), cache=cache), DiskCache)
    assert not isinstance(filesystem("memory://x", cache=cache), DiskCache)
    assert storage_traits(filesystem(str(tmp_path))).is_local
