"""The text of an engine failure: the user's own exception inside the engines' wrappers."""
from __future__ import annotations

import re

__all__ = ["failure_text", "unreadable_input", "vanished_input"]

_CHAINED = "The above exception was the direct cause of the following exception:"
_VANISHED = re.compile(r"\[(?:FAILED_READ_FILE\.FILE_NOT_EXIST\][^\n]*? reading file|PATH_NOT_FOUND\] Path does not exist:) (\S+?)\.?(?:\s|$)")  # Spark, for a file gone
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE[^\]]*\][^\n]*? reading file (\S+?)\.?(?:\s|$)")  # Spark's error class for a file it cannot read


def failure_text(exc: BaseException) -> str:
    """The user's exception inside an engine's wrappers, as ``Type: message``.

    Engines that run tasks in other processes ship the task's traceback as text; its first
    chained error is the one the op raised.
    """
    text = str(exc)
    if _CHAINED in text:
        lines = [line for line in text.split(_CHAINED, 1)[0].splitlines() if line.strip()]
        if lines:
            return lines[-1].strip()
    inner = getattr(exc, "cause", None) or exc.__cause__
    if isinstance(inner, BaseException) and inner is not exc:
        return failure_text(inner)
    return f"{type(exc).__name__}: {text.strip()}"


def unreadable_input(text: str) -> str | None:
    """The input file an engine stopped at because it could not read it (Spark's ``FAILED_READ_FILE``: a corrupt Parquet data page), named in its failure text."""
    found = _FAILED_READ.search(text)
    return found.group(1) if found else None


def vanished_input(text: str) -> str | None:
    """The input file an engine stopped at because it was gone since it was listed (removed while Spark planned or ran the job), named in its failure text."""
    found = _VANISHED.search(text)
    return found.group(1) if found else None
