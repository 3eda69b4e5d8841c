"""Replace e-mail addresses, phone numbers and IP addresses with placeholders, and count them."""
from __future__ import annotations

import ipaddress
import re
from typing import Literal

import numpy as np

from dataflow.ops.declare import op

__all__ = ["redact_text_pii", "redact"]

Kind = Literal["email", "phone", "ipv4", "ipv6"]

_PATTERNS: dict[str, re.Pattern] = {
    "email": re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    "ipv6": re.compile(r"(?<![0-9A-Fa-f:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])"),
    "ipv4": re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.])"),
    "phone": re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?![\w-])|(?<![\w+])\+\d{8,14}(?!\w)"),
}
_ORDER = ("email", "ipv6", "ipv4", "phone")  # e-mails hold digits, IPs look like numbers


def _valid(kind: str, text: str) -> bool:
    if kind == "ipv6":
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            return False
        return True
    if kind == "phone":
        digits = sum(c.isdigit() for c in text)
        return 9 <= digits <= 15
    return True


def redact(text: str, kinds: tuple[str, ...], placeholder: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with each PII match replaced, and the number of matches per kind."""
    counts = dict.fromkeys(kinds, 0)
    for kind in _ORDER:
        if kind not in counts:
            continue

        def sub(m: re.Match, kind=kind) -> str:
            if not _valid(kind, m.group(0)):
                return m.group(0)
            counts[kind] += 1
            return placeholder.format(kind=kind.upper())

        text = _PATTERNS[kind].sub(sub, text)
    return text, counts


@op(
    name="text.redact_pii",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=("{column}", "pii_email", "pii_phone", "pii_ip"),
    batch_format="numpy",
)
def redact_text_pii(
    batch: dict, *, kinds: tuple[Kind, ...] = ("email", "phone", "ipv4", "ipv6"), placeholder: str = "<{kind}>", column: str = "text"
) -> dict:
    """Replace e-mail addresses, phone numbers (9-15 digits, with separators or a leading +) and IPv4/IPv6 addresses.

    Each match becomes ``placeholder`` (``<EMAIL>``, ``<PHONE>``, ``<IPV4>``, ``<IPV6>`` by
    default); the counts per row go to ``pii_email``, ``pii_phone`` and ``pii_ip``.

    Args:
        kinds: Which kinds to redact.
        placeholder: Replacement text; ``{kind}`` is the upper-case kind.
        column: Column holding the text.
    """
    n = len(batch[column])
    out = np.empty(n, dtype=object)
    counts = {k: np.zeros(n, dtype=np.int64) for k in ("email", "phone", "ip")}
    for i, text in enumerate(batch[column]):
        out[i], found = redact(text or "", tuple(kinds), placeholder)
        counts["email"][i] = found.get("email", 0)
        counts["phone"][i] = found.get("phone", 0)
        counts["ip"][i] = found.get("ipv4", 0) + found.get("ipv6", 0)
    batch[column] = out
    batch["pii_email"], batch["pii_phone"], batch["pii_ip"] = counts["email"], counts["phone"], counts["ip"]
    return batch
