"""What a storage scheme is, declared as class attributes of its filesystem class (like fsspec's ``protocol``).

Each storage class of ``connectors.storage`` sets the three attributes; a foreign fsspec class
(``gcsfs``, ``adlfs``) that sets none reads as remote object storage (``REMOTE``). Ask through
``connectors.registry.storage_traits(uri)``, never by comparing scheme names.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REMOTE", "StorageTraits", "traits_of"]


@dataclass(frozen=True)
class StorageTraits:
    """The traits of one storage class.

    Attributes:
        is_local: The data lives on this machine (its disk or this process's memory): another
            node or pod cannot see it.
        read_through_cache: Reads go through the node-local cache tier when one is configured.
        atomic_rename: Renaming a folder is one atomic step, so a commit renames; object stores
            copy on rename and commit object by object.
    """

    is_local: bool
    read_through_cache: bool
    atomic_rename: bool


REMOTE = StorageTraits(is_local=False, read_through_cache=True, atomic_rename=False)


def traits_of(cls: type) -> StorageTraits:
    """The traits a filesystem class declares; ``REMOTE`` ones where it declares none."""
    return StorageTraits(**{name: getattr(cls, name, getattr(REMOTE, name)) for name in REMOTE.__dataclass_fields__})
