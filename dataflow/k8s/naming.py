"""Object names: pipeline and stage names in the DNS form Kubernetes requires."""
from __future__ import annotations

import re

__all__ = ["dns_name"]


def dns_name(name: str) -> str:
    """Return a name in DNS form: lower case, with ``_``, ``.`` and spaces as ``-``."""
    return re.sub(r"[_.\s]+", "-", name.strip().lower())
