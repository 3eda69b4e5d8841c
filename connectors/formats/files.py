"""``files`` sink writer: a bytes column back as one file per row, with an index."""
from __future__ import annotations

import hashlib
import json
import posixpath
import re

from connectors.formats import WrittenFile
from connectors.formats.encode import json_value
from dataflow.columns import SOURCE
from dataflow.lineage import strip_fragments

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _stem(source: str) -> str:
    name = posixpath.basename(strip_fragments(source)) or "row"
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return _SAFE.sub("_", stem).strip("._")[:80] or "row"


class FilesFormat:
    """Write each row's ``column`` (default ``bytes``) to ``<stem>-<hash>.<ext>`` in the shard's folder.

    The other columns go to the shard's ``index.jsonl`` with the file name, so nothing is lost.
    Names are derived from ``__source__`` (the row's number when the sink leaves lineage out) with unsafe characters replaced: never a path outside the
    output root.
    """

    extension = None

    @staticmethod
    def write(fs, path: str, cols, options) -> list[WrittenFile]:
        column = options.get("column", "bytes")
        if column not in cols:
            raise KeyError(f"files sink: no column '{column}' to write (have {sorted(cols)}); set sink.options.column")
        folder = path
        n = len(cols[column])
        written, index = [], []
        for i in range(n):
            source = str(cols[SOURCE][i]) if SOURCE in cols else str(i)
            ext = options.get("extension") or (str(cols["format"][i]) if "format" in cols else "bin")
            ext = _SAFE.sub("", ext) or "bin"
            digest = hashlib.sha1(source.encode("utf-8")).hexdigest()[:10]
            name = f"{_stem(source)}-{digest}.{ext}"
            data = bytes(cols[column][i])
            with fs.open(posixpath.join(folder, name), "wb") as f:
                f.write(data)
            written.append(WrittenFile(posixpath.join(folder, name), 1, len(data)))
            index.append({"file": name, **{k: json_value(cols[k][i]) for k in cols if k != column}})
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in index).encode("utf-8")
        with fs.open(posixpath.join(folder, "index.jsonl"), "wb") as f:
            f.write(text)
        written.append(WrittenFile(posixpath.join(folder, "index.jsonl"), 0, len(text)))
        return written
