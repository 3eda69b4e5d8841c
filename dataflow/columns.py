"""dataflow's own columns: names in a reserved namespace that user data never takes.

Like WebDataset's ``__key__`` / ``__url__``, dataflow's columns are spelled ``__<name>__``. A user
column may be called ``source``, ``id``, ``text``, ``bytes``, ``image``, ``path`` or ``key``; it
round-trips untouched, because dataflow reads and writes only the names below. Working columns
that live only inside a step or a stage (a row index, a hidden count, a parse flag) are spelled
``__df_<name>__``; input data never brings one in: a declared input schema naming one is a plan
error, and a row holding a value in such a column (a Parquet, JSON or CSV file's) is a row error of
the read, whose column is left out (``working_column_reason``).
"""
from __future__ import annotations

__all__ = ["SOURCE", "is_working", "working_column_reason"]

SOURCE = "__source__"
"""Lineage and row identity: the input's URI plus the row's position in it (``#line=N``,
``#row=N``, ``#key=K``, ``#t=a,b``). Set by the reader, never from user values (a ``__source__``
in the data is replaced); unique per row, so a dedup keeps the row with the smallest one and
results do not depend on partitioning. Steps that could repeat one keep it unique: a left row
joined to several right rows gets ``#match=k``, a row of overlapping windows ``#window=S``. The
fragments are declared in ``dataflow.lineage``, with the function that takes them off."""


def is_working(name: str) -> bool:
    """True for a name spelled like dataflow's working columns (``__df_<name>__``), which input data may not use."""
    return len(name) > 7 and name.startswith("__df_") and name.endswith("__")


def working_column_reason(name: str) -> str:
    """Why input column ``name`` (a working column's spelling) is refused: one message for every place that checks."""
    return f"column '{name}' is in dataflow's reserved namespace __df_<name>__ (its working columns); rename it in the input"
