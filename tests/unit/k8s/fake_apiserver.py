"""A small stand-in for the Kubernetes API server on 127.0.0.1: it records requests and answers like the real one.

No API server can run on our machines, so this is the one mock of the k8s tests. It stores the
objects POSTed to collection paths (``dryRun=All`` stores nothing), answers ``409 AlreadyExists``
for a name it holds, serves GETs (an object's ``status`` from a queue the test sets), merges
PATCHed metadata, and answers DELETE with ``Success`` or ``404 NotFound``; pods and their logs
come from what the test sets. The real kubernetes client talks to it over HTTP.
"""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakeApiServer", "Request"]


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class FakeApiServer:
    """Objects by path, recorded requests, and the statuses, pods and logs a test wants served."""

    objects: dict[str, dict] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    statuses: dict[str, list[dict]] = field(default_factory=dict)
    pods: list[dict] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)

    def start(self) -> str:
        """Serve on a free loopback port; return the base URL."""
        server = self
        handler = type("Handler", (_Handler,), {"api": server})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def set_status(self, object_path: str, *statuses: dict) -> None:
        """Serve these ``status`` values for ``object_path``, one per GET; the last one stays."""
        self.statuses[object_path] = list(statuses)


def _status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


class _Handler(BaseHTTPRequestHandler):
    api: FakeApiServer

    def log_message(self, format, *args):  # keep the test output quiet
        return

    def _reply(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> tuple[str, dict[str, str], Any]:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        self.api.requests.append(Request(self.command, parts.path, query, body))
        return parts.path, query, body

    def do_POST(self):
        path, query, body = self._record()
        key = f"{path}/{body['metadata']['name']}"
        if key in self.api.objects:
            return self._reply(409, _status(409, "AlreadyExists", f"{path.rsplit('/', 1)[-1]} \"{body['metadata']['name']}\" already exists"))
        created = json.loads(json.dumps(body))
        created["metadata"].update(uid=str(uuid.uuid5(uuid.NAMESPACE_URL, key)), resourceVersion="1", creationTimestamp="2026-12-02T00:00:00Z")
        if query.get("dryRun") != "All":
            self.api.objects[key] = created
        self._reply(201, created)

    def do_GET(self):
        path, query, _ = self._record()
        if path.endswith("/log"):
            name = path.split("/")[-2]
            return self._reply(200, self.api.logs[name], "text/plain") if name in self.api.logs else self._reply(404, _status(404, "NotFound", f"pods \"{name}\" not found"))
        if path.endswith("/pods"):
            selector = query.get("labelSelector", "")
            key, _, value = selector.partition("=")
            items = [p for p in self.api.pods if p["metadata"].get("labels", {}).get(key) == value]
            return self._reply(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
        key = path.removesuffix("/status")
        if key not in self.api.objects:
            return self._reply(404, _status(404, "NotFound", f"\"{key.rsplit('/', 1)[-1]}\" not found"))
        obj = dict(self.api.objects[key])
        queue = self.api.statuses.get(key)
        if queue:
            obj["status"] = queue.pop(0) if len(queue) > 1 else queue[0]
        self._reply(200, obj)

    def do_PATCH(self):
        path, _, body = self._record()
        if path not in self.api.objects:
            return self._reply(404, _status(404, "NotFound", "not found"))
        self.api.objects[path]["metadata"].update(body.get("metadata", {}))
        self._reply(200, self.api.objects[path])

    def do_DELETE(self):
        path, query, _ = self._record()
        if path not in self.api.objects:
            return self._reply(404, _status(404, "NotFound", f"\"{path.rsplit('/', 1)[-1]}\" not found"))
        if query.get("dryRun") != "All":
            del self.api.objects[path]
        self._reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
