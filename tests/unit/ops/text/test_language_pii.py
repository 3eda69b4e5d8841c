"""text.detect_language (py3langid, offline) and text.redact_pii."""
from __future__ import annotations

import random

import numpy as np
import pytest

from dataflow.ops.text.redact_pii import redact, redact_text_pii
from examples.generate_text import ENGLISH, FOREIGN, document


def _texts():
    rng = random.Random(0)
    return [document(rng, ENGLISH, 80), document(rng, FOREIGN["de"].split(), 80), document(rng, FOREIGN["fr"].split(), 80), document(rng, FOREIGN["es"].split(), 80), ""]


def test_detect_language_labels_and_filters():
    pytest.importorskip("py3langid")
    from dataflow.ops.text.detect_language import detect_text_language

    texts = np.array(_texts(), dtype=object)
    out = detect_text_language({"text": texts.copy(), "__source__": np.arange(5).astype(str).astype(object)})
    assert list(out["language"]) == ["en", "de", "fr", "es", ""]
    assert (out["language_score"][:4] > 0.9).all() and out["language_score"][4] == 0.0
    kept = detect_text_language({"text": texts.copy(), "__source__": np.arange(5).astype(str).astype(object)}, languages=["en", "fr"], min_score=0.5)
    assert list(kept["__source__"]) == ["0", "2"] and list(kept["language"]) == ["en", "fr"]


def test_detect_language_rejects_a_bad_param():
    pytest.importorskip("py3langid")
    from dataflow.ops.text.detect_language import detect_text_language

    with pytest.raises(Exception, match="languages"):
        detect_text_language.params(languages="en")


def test_redact_each_kind_and_count():
    text = (
        "Mail jane.doe+news@mail.example.co.uk or call +1 (415) 555-0199 / 030 1234 5678. "
        "Hosts 192.168.10.254 and 2001:db8::8a2e:370:7334 answer; version 1.2.3.4.5 and 3.14 do not, nor 2024-01-05."
    )
    out, counts = redact(text, ("email", "phone", "ipv4", "ipv6"), "<{kind}>")
    assert counts == {"email": 1, "phone": 2, "ipv4": 1, "ipv6": 1}
    assert "<EMAIL>" in out and "<IPV4>" in out and "<IPV6>" in out and out.count("<PHONE>") == 2
    assert "1.2.3.4.5" in out and "3.14" in out and "2024-01-05" in out


def test_redact_op_writes_counts_and_honours_kinds():
    batch = {"text": np.array(["ip 10.0.0.1 mail a@b.io", "nothing here"], dtype=object)}
    out = redact_text_pii(batch, kinds=("ipv4",), placeholder="[{kind}]")
    assert list(out["text"]) == ["ip [IPV4] mail a@b.io", "nothing here"]
    assert list(out["pii_ip"]) == [1, 0] and list(out["pii_email"]) == [0, 0]
    with pytest.raises(Exception, match="kinds"):
        redact_text_pii.params(kinds=("ssn",))
