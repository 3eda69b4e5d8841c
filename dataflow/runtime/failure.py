"""The text of an engine failure: the user's own exception inside the engines' wrappers."""
from __future__ import annotations

__all__ = ["failure_text"]

_CHAINED = "The above exception was the direct cause of the following exception:"


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
