"""Row errors: the record written for each bad row, and the JSONL writer."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

__all__ = ["ErrorRecord", "write_error_records"]


@dataclass(frozen=True)
class ErrorRecord:
    """One bad row: where it came from, which op refused it, and why."""

    source: str
    op: str
    error_type: str
    reason: str

    @classmethod
    def of_read(cls, bad) -> ErrorRecord:
        """The read's record of a reader's ``BadRecord``."""
        return cls(bad.source, "read", bad.error_type, bad.reason)


def write_error_records(fs, path: str, records: list[ErrorRecord]) -> None:
    """Write records as JSONL to ``path`` on ``fs`` (one file per batch, written whole)."""
    text = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in records)
    with fs.open(path, "wb") as f:
        f.write(text.encode("utf-8"))
