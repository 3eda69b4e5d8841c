"""JSONL sink writer."""
from __future__ import annotations

import json

from connectors.formats import WrittenFile
from connectors.formats.encode import json_value


class JsonlFormat:
    """Write one JSON object per row; bytes as base64 text, arrays as nested lists."""

    extension = "jsonl"

    @staticmethod
    def write(fs, path: str, cols, options) -> list[WrittenFile]:
        names = list(cols)
        n = len(cols[names[0]]) if names else 0
        lines = [json.dumps({k: json_value(cols[k][i]) for k in names}, ensure_ascii=False) for i in range(n)]
        data = ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")
        with fs.open(path, "wb") as f:
            f.write(data)
        return [WrittenFile(path, n, len(data))]
