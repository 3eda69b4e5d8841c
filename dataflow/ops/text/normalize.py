"""Normalise text: Unicode form, control characters, whitespace, and optionally mojibake."""
from __future__ import annotations

import re
import unicodedata
from typing import Literal

import numpy as np

from dataflow.errors import RowError
from dataflow.ops.declare import op

__all__ = ["fix_mojibake", "normalize_text"]

_CP1252_EXTRA = "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
# Runs of characters that UTF-8 bytes become when misread as Windows-1252 or Latin-1.
_SUSPECT_RUN = re.compile(f"[\u0080-\u00ff{_CP1252_EXTRA}]{{2,}}")
_KEEP_CONTROLS = {"\t", "\n"}
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_INVISIBLE = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}


def _as_bytes(run: str) -> bytes | None:
    out = bytearray()
    for ch in run:
        try:
            out += ch.encode("cp1252")
        except UnicodeEncodeError:
            if ord(ch) > 0xFF:
                return None
            out.append(ord(ch))  # bytes cp1252 leaves undefined come through Latin-1
    return bytes(out)


def _repair(match: re.Match) -> str:
    raw = _as_bytes(match.group(0))
    if raw is None:
        return match.group(0)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return match.group(0)


def fix_mojibake(text: str) -> str:
    """Undo UTF-8 text that was decoded as Windows-1252/Latin-1 (``cafÃ©`` -> ``café``), run by run.

    A run is replaced only when its bytes form valid UTF-8, so correct accented text is left alone.
    """
    return _SUSPECT_RUN.sub(_repair, text)


def _clean(text: str, form: str, mojibake: bool, controls: bool, whitespace: bool) -> str:
    if mojibake:
        text = fix_mojibake(text)
    text = unicodedata.normalize(form, text.replace("\r\n", "\n").replace("\r", "\n"))
    if controls:
        text = "".join(ch for ch in text if ch in _KEEP_CONTROLS or (unicodedata.category(ch) != "Cc" and ch not in _INVISIBLE))
    if whitespace:
        text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n"))
        text = _BLANK_LINES.sub("\n\n", text).strip()
    return text


@op(
    name="text.normalize",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=("{column}",),
    batch_format="numpy",
)
def normalize_text(
    batch: dict,
    *,
    form: Literal["NFC", "NFKC", "NFD", "NFKD"] = "NFC",
    fix_mojibake: bool = False,
    remove_control: bool = True,
    collapse_whitespace: bool = True,
    column: str = "text",
) -> dict:
    """Normalise each text: Unicode ``form``, no control or zero-width characters, tidy whitespace.

    Whitespace tidying turns CR/CRLF into LF, runs of spaces and tabs into one space, strips each
    line and keeps at most one blank line in a row. A missing (null) text is a row error.

    Args:
        form: Unicode normalisation form.
        fix_mojibake: Repair UTF-8 that was misdecoded as Windows-1252/Latin-1 (``Ã©`` -> ``é``).
        remove_control: Drop control characters (except tab and newline) and zero-width characters.
        collapse_whitespace: Tidy whitespace as above.
        column: Column holding the text.
    """
    out = np.empty(len(batch[column]), dtype=object)
    for i, text in enumerate(batch[column]):
        if not isinstance(text, str):
            raise RowError(f"text.normalize: expected a string in column '{column}', got {type(text).__name__}")
        out[i] = _clean(text, form, fix_mojibake, remove_control, collapse_whitespace)
    batch[column] = out
    return batch
