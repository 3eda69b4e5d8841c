"""The scratch-folder check before a run and the disk-error hint after one."""
from __future__ import annotations

import pytest

from dataflow.errors import RunError
from dataflow.runtime.scratch import check_scratch, disk_error_hint, is_disk_error


def test_a_usable_scratch_folder_is_created_and_left_empty(tmp_path, monkeypatch):
    folder = tmp_path / "new" / "scratch"
    monkeypatch.setenv("DATAFLOW_SCRATCH_DIR", str(folder))
    check_scratch()
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_a_file_in_place_of_the_folder_is_refused_by_name(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DATAFLOW_SCRATCH_DIR", str(blocker))
    with pytest.raises(RunError, match=f"^DATAFLOW_SCRATCH_DIR '{blocker}': cannot write there \\(File exists\\)"):
        check_scratch()


def test_disk_errors_are_told_apart_and_the_hint_names_the_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("DATAFLOW_SCRATCH_DIR", str(tmp_path))
    assert is_disk_error("OSError: [Errno 28] No space left on device")
    assert not is_disk_error("ValueError: bad value")
    assert f"scratch folder '{tmp_path}' or sink '/out'" in disk_error_hint("/out")
    assert "or sink" not in disk_error_hint("s3://b/out")
