"""Identify each text's language with py3langid (its model ships in the wheel: no download)."""
from __future__ import annotations

import functools

import numpy as np

from dataflow.ops.declare import op

__all__ = ["detect_text_language", "identifier"]


@functools.lru_cache(maxsize=1)
def identifier():
    """The py3langid identifier with normalised probabilities, loaded once per worker process."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@op(
    name="text.detect_language",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=("language", "language_score"),
    kind="flat_map",
    batch_format="numpy",
    extra="text",
    requires=("py3langid",),
)
def detect_text_language(
    batch: dict, *, languages: list[str] | None = None, min_score: float = 0.0, max_chars: int = 10_000, column: str = "text"
) -> dict:
    """Add the ISO 639-1 ``language`` (97 languages) and its probability ``language_score``; optionally filter.

    With ``languages`` set, rows in other languages are dropped; rows scoring below ``min_score``
    are dropped too (NeMo Curator and Data-Juicer use 0.8 for web text). Empty texts get
    language "" and score 0.

    Args:
        languages: Languages to keep (e.g. [en, de]); all when unset.
        min_score: Smallest probability kept.
        max_chars: Classify only the first this many characters (enough for a confident call).
        column: Column holding the text.
    """
    ident = identifier()
    texts = batch[column]
    langs = np.empty(len(texts), dtype=object)
    scores = np.zeros(len(texts), dtype=np.float64)
    for i, text in enumerate(texts):
        sample = (text or "")[:max_chars]
        if sample.strip():
            langs[i], score = ident.classify(sample)
            scores[i] = float(score)
        else:
            langs[i] = ""
    keep = scores >= min_score
    if languages is not None:
        keep &= np.isin(langs.astype(str), list(languages))
    batch["language"], batch["language_score"] = langs, scores
    return {k: v[keep] for k, v in batch.items()}
