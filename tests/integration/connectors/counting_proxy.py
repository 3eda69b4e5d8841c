"""A small HTTP reverse proxy on 127.0.0.1 in front of the S3 server: counts requests, can inject faults.

Every request is counted as ``(method, path?query)``; a server-side copy (a PUT with
``x-amz-copy-source``) is counted as method ``COPY``. With a ``Faults`` plan, a seeded share of
the requests it matches is answered 503 SlowDown, delayed, or dropped (the connection closed
without an answer).
"""
from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
_SLOW_DOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'
KINDS = ("503", "slow", "drop")


@dataclass
class Faults:
    """Which requests fail and how: ``rate`` of the ``match``-ing ones, at most ``max_faults``, seeded."""

    rate: float = 0.1
    seed: int = 0
    max_faults: int = 1_000
    delay_s: float = 0.3
    match: Callable[[str, str], bool] = lambda method, path: True
    kinds: tuple[str, ...] = KINDS


class CountingProxy:
    """Forward every request to ``upstream`` and count it; ``url`` is the proxy's endpoint.

    ``faults`` (optional) injects failures; ``injected`` counts them by kind (``503``, ``slow``, ``drop``).
    """

    def __init__(self, upstream: str, faults: Faults | None = None):
        target = urlsplit(upstream)
        self.requests: Counter[tuple[str, str]] = Counter()
        self.injected: Counter[str] = Counter()
        self.faults = faults
        self._rng = random.Random(faults.seed if faults else 0)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                return

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                method = "COPY" if self.command == "PUT" and self.headers.get("x-amz-copy-source") else self.command
                fault = proxy._count(method, self.path)
                if fault == "drop":
                    self.close_connection = True
                    return
                if fault == "503":
                    self.send_response(503, "Slow Down")
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                if fault == "slow":
                    time.sleep(proxy.faults.delay_s)
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                # A HEAD answer keeps the object's length (s3fs reads the size from it).
                self.send_header("Content-Length", resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _count(self, method: str, path: str) -> str | None:
        """Count a request and draw its fault (None: forward it untouched)."""
        with self._lock:
            self.requests[(method, path)] += 1
            plan = self.faults
            if plan is None or not plan.match(method, path) or sum(self.injected.values()) >= plan.max_faults:
                return None
            if self._rng.random() >= plan.rate:
                return None
            fault = self._rng.choice(plan.kinds)
            self.injected[fault] += 1
            return fault

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def gets_of(self, prefix: str) -> Counter[str]:
        """GET requests of object paths (no query: listings are left out) under ``/<prefix>``."""
        return Counter({p: n for (m, p), n in self.requests.items() if m == "GET" and p.startswith(f"/{prefix}") and "?" not in p})

    def writes_of(self, prefix: str) -> Counter[tuple[str, str]]:
        """Uploads and copies of objects under ``/<prefix>``: ``(kind, key path)`` for PUT, PART (multipart part) and COPY."""
        out: Counter[tuple[str, str]] = Counter()
        for (method, path), n in self.requests.items():
            key, _, query = path.partition("?")
            if not key.startswith(f"/{prefix}") or method not in ("PUT", "COPY"):
                continue
            kind = "PART" if "partNumber=" in query else method
            out[(kind, key)] += n
        return out

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
