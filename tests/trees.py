"""Folder trees for listing tests: drawn path parts, a tree written from them, and a spy on the listing's worker processes."""
from __future__ import annotations

import os

from hypothesis import strategies as st

PART = st.text(alphabet="ab0.-_ ", min_size=1, max_size=4).filter(lambda p: p not in (".", ".."))


def write_tree(root: str, paths, empty=()) -> None:
    """Files at ``paths`` (tuples of parts) and empty folders at ``empty``; a name drawn as both a file and a folder keeps the first."""
    for rel in paths:
        path = os.path.join(root, *rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x" * len(rel))
        except (IsADirectoryError, FileExistsError, NotADirectoryError):
            pass
    for rel in empty:
        try:
            os.makedirs(os.path.join(root, *rel), exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # a file drawn there
            pass


def workers_scanned(monkeypatch) -> list[str]:
    """Let source listings scan folders in 2 worker processes from the first file; return the folders those scanned."""
    import connectors.listing as listing
    import connectors.walk as walk

    scanned = []

    class Counted(walk.ScanPool):
        def submit(self, folder):
            scanned.append(folder)
            return super().submit(folder)

    monkeypatch.setattr(listing, "LOCAL_WORKERS", 2)
    monkeypatch.setattr(walk, "PARALLEL_AFTER", 0)
    monkeypatch.setattr(walk, "ScanPool", Counted)
    return scanned
