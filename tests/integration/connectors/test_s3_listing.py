"""The listing of an S3 source, its top-level prefixes found at once on threads, equals S3's own sorted find."""
from __future__ import annotations

from connectors.listing import _candidates
from connectors.registry import filesystem, list_source_entries


def test_prefixes_listed_at_once_give_the_sorted_find(s3_options, bucket):
    fs = filesystem("s3://", {"s3": s3_options})
    names = ["z.jsonl", "a-b.jsonl", "a/1.jsonl", "a/b/2.jsonl", "a/_tmp/3.jsonl", ".git/4.jsonl", "b/c/d/5.jsonl.gz", "b/6.txt", "c/7.ndjson"]
    for name in names:
        fs.pipe_file(f"{bucket}/src/{name}", b"{}\n")
    fs.invalidate_cache()
    entries, skipped = list_source_entries(f"s3://{bucket}/src", "jsonl", {}, {"s3": s3_options})
    got = [(u, i["size"], i["ETag"]) for u, i in entries]
    want = [(f"s3://{p}", i["size"], i["ETag"]) for p, i in _candidates(fs, f"s3://{bucket}/src", f"{bucket}/src", True)[0] if not p.endswith(".txt")]
    assert got == want
    assert [u.rsplit("/src/", 1)[1] for u, _, _ in got] == ["a-b.jsonl", "a/1.jsonl", "a/b/2.jsonl", "b/c/d/5.jsonl.gz", "c/7.ndjson", "z.jsonl"]
    assert skipped == {".txt": 1}
