"""S3 and S3-compatible storage through s3fs."""
from __future__ import annotations

import contextvars
import errno
import math
import os

from botocore.exceptions import ClientError
from fsspec.asyn import sync
from s3fs import S3FileSystem

from connectors.storage.io_counters import COUNTERS

PART_BYTES = 5 * 2**20  # S3's smallest part: uploads of two parts or more are multipart
_MAX_PARTS = 10_000
# Client calls made inside one s3fs call: s3fs calls again (a retry) on SlowDown and on
# connection errors the client gave up on. Drops on a reused connection are retried by aiohttp
# itself, unseen (not counted).
_CALLS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("dataflow_s3_calls", default=None)


def _on_request(request, **_) -> None:
    """Count each HTTP attempt; botocore numbers the attempts of one call from 1."""
    attempt = (getattr(request, "context", None) or {}).get("retries", {}).get("attempt", 1)
    COUNTERS.add(requests=1, retries=1 if attempt > 1 else 0)


def _on_call(**_) -> None:
    calls = _CALLS.get()
    if calls is not None:
        calls[0] += 1
        if calls[0] > 1:
            COUNTERS.add(retries=1)


class S3Storage(S3FileSystem):
    """``s3://bucket/key``; options are s3fs keywords, ``endpoint_url`` included.

    Without an ``endpoint_url`` option, ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) is used;
    credentials fall back to the standard AWS environment variables and profiles.
    """

    is_local = False
    read_through_cache = True
    atomic_rename = False

    def __init__(self, **kwargs):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint and "endpoint_url" not in kwargs and "endpoint_url" not in kwargs.get("client_kwargs", {}):
            kwargs["endpoint_url"] = endpoint
        super().__init__(**kwargs)

    async def set_session(self, refresh=False, kwargs={}):  # noqa: B006 (s3fs's signature)
        """Set up the client, with our request counters on its events (``connectors.storage.io_counters``)."""
        client = await super().set_session(refresh=refresh, kwargs=kwargs)
        if not getattr(client, "_dataflow_counted", False):
            client.meta.events.register("request-created.s3", _on_request)
            client.meta.events.register("before-call.s3", _on_call)
            client._dataflow_counted = True
        return client

    async def _call_s3(self, method, *args, **kwargs):
        token = _CALLS.set([0])
        try:
            return await super()._call_s3(method, *args, **kwargs)
        finally:
            _CALLS.reset(token)

    def put_whole(self, local: str, remote: str) -> None:
        """Upload a finished local file whole: one PUT, or a multipart upload from ``2 * PART_BYTES`` up.

        The object appears only when the upload completes; a failed multipart upload is aborted.
        """
        size = os.path.getsize(local)
        self.put_file(local, remote, chunksize=max(PART_BYTES, math.ceil(size / _MAX_PARTS)))

    @property
    def fsid(self) -> str:
        """Names the endpoint, so one cache directory can front several S3 services."""
        endpoint = self.client_kwargs.get("endpoint_url") or self.storage_options.get("endpoint_url") or "aws"
        return f"s3:{endpoint}"

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        """Move a key, or every key under a prefix when ``recursive`` (s3fs copies the prefix itself and fails)."""
        if recursive and isinstance(path1, str) and isinstance(path2, str) and self.isdir(path1):
            src = self._strip_protocol(path1).rstrip("/")
            dst = self._strip_protocol(path2).rstrip("/")
            files = [f for f in self.find(src, maxdepth=maxdepth) if f != src]
            targets = [f"{dst}/{f[len(src) + 1:]}" for f in files]
            if files:
                self.copy(files, targets, **kwargs)
                self.rm(files)
            return None
        return super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def cat_file_if_match(self, path: str, etag: str, start: int | None = None, end: int | None = None) -> bytes:
        """Return the object's bytes (or ``[start, end)``) only if its ETag is still ``etag``.

        The cache tier stores what it fetches under the version it listed; ``If-Match`` makes
        S3 refuse the read when the object changed in between.

        Raises:
            OSError: ``errno.ESTALE`` when the object no longer has that ETag.
            FileNotFoundError: the object is gone.
        """
        bucket, key, _ = self.split_path(path)
        kw = {"Bucket": bucket, "Key": key, "IfMatch": etag}
        if start is not None or end is not None:
            kw["Range"] = f"bytes={start or 0}-{'' if end is None else end - 1}"

        async def _read() -> bytes:
            try:
                resp = await self._call_s3("get_object", **kw)
            except (ClientError, OSError) as exc:
                if _precondition_failed(exc):
                    raise OSError(errno.ESTALE, f"s3://{path} changed since it was listed (ETag is no longer {etag})") from exc
                raise
            async with resp["Body"] as body:
                return await body.read()

        return sync(self.loop, _read)


def _precondition_failed(exc: BaseException) -> bool:
    """Whether S3 answered 412 (s3fs wraps the ClientError in an OSError)."""
    while exc is not None:
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            return error.get("Code") in ("PreconditionFailed", "412") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412
        exc = exc.__cause__
    return False
