"""Ray's FetchFiles (in this process, no Ray): whole files as rows; a file that cannot be a row is a read error of its own."""
from __future__ import annotations

import json

import numpy as np

from dataflow.runtime.stats import SideOutputs


def test_a_file_gone_since_the_listing_is_one_read_error_and_the_others_are_fetched(tmp_path):
    """Images on shared storage get deleted while a run reads them: before, the task failed and the run with it."""
    from dataflow.engines.ray.read import FetchFiles

    (tmp_path / "a.bin").write_bytes(b"alpha")
    (tmp_path / "c.bin").write_bytes(b"gamma")
    (tmp_path / "d").mkdir()  # a folder where a file was listed
    out = tmp_path / "out"
    side = SideOutputs(str(out), {}, str(out / "_stats"), str(out / "_errors"))
    uris = [str(tmp_path / n) for n in ("a.bin", "b.bin", "c.bin", "d")]
    got = FetchFiles(str(tmp_path), {}, None, side)({"uri": np.array(uris), "info": np.array([""] * 4)})
    assert list(got["path"]) == [uris[0], uris[2]] and list(got["bytes"]) == [b"alpha", b"gamma"]
    errors = [json.loads(line) for p in (out / "_errors").iterdir() for line in p.read_text().splitlines()]
    assert sorted((e["source"], e["error_type"]) for e in errors) == [(uris[1], "FileNotFoundError"), (uris[3], "IsADirectoryError")]
    assert all(e["reason"].startswith("listed, then not readable: ") for e in errors)
    (stats,) = [json.loads(p.read_text()) for p in (out / "_stats").iterdir()]
    assert stats["-1"]["rows_in"] == stats["-1"]["rows_errored"] == 2
