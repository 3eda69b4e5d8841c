"""Generate JSONL documents for pipelines/text_curation.yaml, with planted problems to find.

Writes English documents built from a real vocabulary, plus: exact duplicates (whitespace
changed), near-duplicates (one word changed), low-quality documents (too short, symbol soup,
repeated lines, bullet lists), German/French/Spanish documents, documents with e-mail addresses,
phone numbers and IPs, mojibake, and malformed lines (bad JSON, invalid UTF-8).

Usage: python examples/generate_text.py OUT_DIR [--docs 40] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random

ENGLISH = (
    "the of and to in that have with for on be is was are it as at by this from they we say her she or an will my one all "
    "would there their what so up out if about who get which go me when make can like time no just him know take people "
    "into year your good some could them see other than then now look only come its over think also back after use two how "
    "our work first well way even new want because any these give day most us river mountain village market garden library "
    "teacher student history science music painting kitchen harbour railway station morning evening winter summer autumn "
    "forest island bridge castle museum theatre festival journey letter window doctor engineer farmer captain weather "
    "breakfast dinner machine computer language country city street family friend children question answer problem "
    "morning quietly carefully slowly bright ancient modern famous simple gentle narrow"
).split()
FOREIGN = {
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er hat dass sie "
    "nach wird bei einer um am sind noch wie einem über einen so zum war haben nur oder aber vor zur bis mehr durch man "
    "sein wurde sei Stadt Haus Fluss Berg Dorf Markt Garten Schule Lehrer Geschichte Musik Küche Bahnhof Morgen Abend",
    "fr": "le la les de des et en un une du que qui dans pour pas sur au avec ce il elle est sont par plus ne se son sa nous vous "
    "mais ou comme tout bien aussi leur même fait faire ville maison rivière montagne village marché jardin école "
    "professeur histoire musique cuisine gare matin soir hiver été automne forêt",
    "es": "el la los las de del y en un una que por con para no es se lo como más pero sus le ya o este sí porque esta entre "
    "cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno les ni contra otros ciudad "
    "casa río montaña pueblo mercado jardín escuela profesor historia música cocina estación mañana tarde",
}
PII = ("Contact me at {name}@example.org for details.", "Call +1 415-555-{num:04d} after noon.", "The server at 10.0.{a}.{b} answered.")


def sentence(rng: random.Random, words: list[str], n: int) -> str:
    text = " ".join(rng.choice(words) for _ in range(n))
    return text[0].upper() + text[1:] + "."


def document(rng: random.Random, words: list[str], n_words: int) -> str:
    out, left = [], n_words
    while left > 0:
        n = min(left, rng.randint(8, 16))
        out.append(sentence(rng, words, n))
        left -= n
    return " ".join(out)


def generate_text(folder: pathlib.Path, docs: int = 40, seed: int = 0) -> dict[str, int]:
    """Write ``docs.jsonl`` (+ ``bad.jsonl``) into ``folder``; return the count of each kind."""
    rng = random.Random(seed)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    counts = {"unique": docs, "exact_duplicates": 0, "near_duplicates": 0, "low_quality": 0, "foreign": 0, "pii_docs": 0, "mojibake": 0, "bad_lines": 0}
    originals = [document(rng, ENGLISH, rng.randint(150, 220)) for _ in range(docs)]
    for i, text in enumerate(originals):
        if i % 5 == 1:
            text = f"{text} {PII[i % 3].format(name=f'user{i}', num=i, a=i % 256, b=(i * 7) % 256)}"
            originals[i] = text
            counts["pii_docs"] += 1
        if i % 9 == 4:
            text = text.replace(".", ". Caf\u00c3\u00a9 na\u00c3\u00afve.", 1)  # "Café naïve" misdecoded as Latin-1
            originals[i] = text
            counts["mojibake"] += 1
        rows.append({"id": f"doc-{i}", "text": text})
    for i in range(0, docs, 6):
        rows.append({"id": f"exact-{i}", "text": "  " + originals[i].replace(" ", "  ", 3) + "\n"})
        counts["exact_duplicates"] += 1
    for i in range(3, docs, 6):
        words = originals[i].split(" ")
        k = len(words) // 2
        words[k] = "lighthouse" if words[k] != "lighthouse" else "orchard"
        rows.append({"id": f"near-{i}", "text": " ".join(words)})
        counts["near_duplicates"] += 1
    low = [
        "Too short to be a document.",
        "# " * 60 + " ".join(rng.choice(ENGLISH) for _ in range(60)),
        "\n".join(["Buy now and save with the best deals of the year today."] * 12),
        "\n".join(f"- {sentence(rng, ENGLISH, 6)}" for _ in range(15)),
    ]
    rows += [{"id": f"low-{i}", "text": t} for i, t in enumerate(low)]
    counts["low_quality"] = len(low)
    for lang, vocab in FOREIGN.items():
        words = vocab.split()
        for j in range(2):
            rows.append({"id": f"{lang}-{j}", "text": document(rng, words, rng.randint(150, 200))})
            counts["foreign"] += 1
    rng.shuffle(rows)
    (folder / "docs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    bad = b'{"id": "broken", "text": "no closing brace"\n' + b'{"id": "latin1", "text": "caf\xe9"}\n' + b"[1, 2, 3]\n"
    (folder / "bad.jsonl").write_bytes(json.dumps({"id": "fine", "text": originals[0]}).encode() + b"\n" + bad)
    counts["bad_lines"] = 3
    counts["exact_duplicates"] += 1  # bad.jsonl's one good line repeats doc-0
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(generate_text(pathlib.Path(args.out), args.docs, args.seed)))


if __name__ == "__main__":
    main()
