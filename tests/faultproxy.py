"""A fault-injecting HTTP proxy on 127.0.0.1: 503s, slow answers and dropped connections.

It forwards each request to one upstream (the moto S3 server) and, for a seeded share of
requests, answers 503 SlowDown, sleeps before forwarding, or closes the connection without an
answer. Counts of what it did are kept for the test to compare with the run report.
"""
from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_SLOW_DOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'


class FaultProxy:
    """Start with ``with FaultProxy(upstream_port, rate=0.1) as proxy: proxy.endpoint``."""

    def __init__(self, upstream_port: int, *, rate: float = 0.1, seed: int = 0, max_faults: int = 10_000):
        self.upstream_port, self.rate, self.max_faults = upstream_port, rate, max_faults
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = proxy._draw()
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "503":
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                if fault == "slow":
                    time.sleep(0.3)
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{proxy.upstream_port}"
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _draw(self) -> str | None:
        with self.lock:
            self.counts["requests"] += 1
            if sum(self.counts[k] for k in ("503", "slow", "drop")) >= self.max_faults or self.rng.random() >= self.rate:
                return None
            fault = self.rng.choice(("503", "slow", "drop"))
            self.counts[fault] += 1
            return fault

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
