"""An S3 source's listing: one serial ``find`` against its top-level prefixes found at once on threads.

moto's server runs in its own process on 127.0.0.1; a proxy (the tests' ``CountingProxy``) adds
``DELAY`` seconds to each LIST request, as a remote store's latency. Contenders alternated, 3 rounds.

Usage: python benchmarks/s3_listing.py PREFIXES KEYS_PER_PREFIX DELAY   (e.g. 16 500 0.05)
"""
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
srv = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    import boto3
    ep = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            boto3.client("s3", endpoint_url=ep).list_buckets()
            break
        except Exception:
            time.sleep(0.1)
    s3 = boto3.client("s3", endpoint_url=ep)
    s3.create_bucket(Bucket="bench-listing")
    P, K, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda i: s3.put_object(Bucket="bench-listing", Key=f"src/p{i // K:03d}/f{i % K:05d}.jsonl", Body=b"{}\n"), range(P * K)))
    from tests.integration.connectors.counting_proxy import CountingProxy, Faults
    proxy = CountingProxy(ep, Faults(rate=1.0, kinds=("slow",), delay_s=delay, max_faults=10**9, match=lambda m, p: m == "GET" and "list-type" in p))
    with proxy:
        from connectors.registry import filesystem
        import connectors.listing as L
        opts = {"s3": {"endpoint_url": proxy.url, "key": "testing", "secret": "testing"}}
        def fresh():
            fs = filesystem("s3://", opts)
            fs.invalidate_cache()
            return fs

        def serial():
            return len(L._candidates(fresh(), "s3://bench-listing/src", "bench-listing/src", True)[0])  # the listing before: one find

        def parallel():
            return len(L.list_source(fresh(), "s3://bench-listing/src", "bench-listing/src", "jsonl", {}).entries)

        assert serial() == parallel() == P * K
        res = {"find (serial)": [], "prefixes on threads": []}
        for r in range(3):
            order = list(res) if r % 2 == 0 else list(res)[::-1]
            for k in order:
                t = time.perf_counter()
                (serial if k.startswith("find") else parallel)()
                res[k].append(time.perf_counter() - t)
    for k, v in res.items(): print(f"{P} prefixes x {K} keys, +{delay * 1000:.0f} ms per LIST: {k}: {statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})")
    print("load", os.getloadavg())
finally:
    srv.terminate()
    srv.wait()
