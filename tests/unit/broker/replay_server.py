"""Serve recorded API responses on 127.0.0.1: path -> (status, JSON body); every request is kept for asserts."""
from __future__ import annotations

import json
import pathlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["RECORDED", "ReplayServer"]

RECORDED = pathlib.Path(__file__).parent / "recorded"


@dataclass
class ReplayServer:
    """Answers GETs from ``routes`` (path -> (status, body)); 404 with a Kubernetes Status for anything else."""

    routes: dict[str, tuple[int, object]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)

    def serve(self, path: str, recording: str, status: int = 200) -> None:
        self.routes[path] = (status, json.loads((RECORDED / recording).read_text()))

    def start(self) -> str:
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_state: ReplayServer

    def log_message(self, format, *args):  # keep test output quiet
        return

    def do_GET(self):
        parts = urlsplit(self.path)
        self.server_state.requests.append((parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}, dict(self.headers)))
        status, body = self.server_state.routes.get(parts.path, (404, {
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
            "message": f"the server could not find the requested resource ({parts.path})",
        }))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
