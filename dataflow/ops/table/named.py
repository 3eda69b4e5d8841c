"""Named tables an engine makes available to ops while it runs them (the right side of a join).

An engine that runs ``table.join`` on Arrow tables reads the pipeline's named source, then calls
the op inside ``bind_tables(name=table)``; a unit test does the same with a hand-made table.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

import pyarrow as pa

__all__ = ["bind_tables", "bound_table"]

_TABLES: contextvars.ContextVar[dict[str, pa.Table]] = contextvars.ContextVar("dataflow_named_tables", default={})


@contextlib.contextmanager
def bind_tables(**tables: pa.Table) -> Iterator[None]:
    """Make ``tables`` available by name to the ops called inside the block."""
    token = _TABLES.set({**_TABLES.get(), **tables})
    try:
        yield
    finally:
        _TABLES.reset(token)


def bound_table(name: str) -> pa.Table:
    """Return the named table bound by the engine.

    Raises:
        KeyError: no table of that name is bound (the engine did not read the named source).
    """
    tables = _TABLES.get()
    if name not in tables:
        raise KeyError(f"no named table '{name}' is bound (have: {', '.join(sorted(tables)) or 'none'}); declare it under sources:")
    return tables[name]
