"""Fixtures over the session's S3 server: storage options and a fresh bucket per test."""
from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def s3_options(s3_endpoint) -> dict:
    """The pipeline's ``storage.options.s3`` for the loopback server (no region_name: moto refuses it)."""
    return {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}


@pytest.fixture
def bucket(s3_options) -> str:
    """A new, empty bucket."""
    from connectors.storage.s3 import S3Storage

    name = f"t-{uuid.uuid4().hex[:12]}"
    S3Storage(**s3_options).mkdir(name)
    return name
