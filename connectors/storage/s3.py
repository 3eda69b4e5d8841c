"""S3 and S3-compatible storage through s3fs."""
from __future__ import annotations

import os

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
