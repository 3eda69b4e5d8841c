"""S3 and S3-compatible storage through s3fs."""
from __future__ import annotations

import errno
import os

from botocore.exceptions import ClientError
from fsspec.asyn import sync
from s3fs import S3FileSystem


class S3Storage(S3FileSystem):
    """``s3://bucket/key``; options are s3fs keywords, ``endpoint_url`` included.

    Without an ``endpoint_url`` option, ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) is used;
    credentials fall back to the standard AWS environment variables and profiles.
    """

    def __init__(self, **kwargs):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint and "endpoint_url" not in kwargs and "endpoint_url" not in kwargs.get("client_kwargs", {}):
            kwargs["endpoint_url"] = endpoint
        super().__init__(**kwargs)

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
