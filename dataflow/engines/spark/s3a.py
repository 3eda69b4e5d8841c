"""Native ``s3a://`` for clusters that have the ``hadoop-aws`` jar: a switch and settings from the pipeline.

Off by default (PySpark's wheel ships no ``hadoop-aws``): S3 is then read and written through the
connectors. Turn it on with the Spark conf ``spark.dataflow.s3a.native=true`` or the environment
variable ``DATAFLOW_SPARK_S3A=native``; the Hadoop settings come from ``storage.options.s3``.
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["NATIVE_CONF", "apply_settings", "native_enabled", "s3a_settings", "to_s3a"]

NATIVE_CONF = "spark.dataflow.s3a.native"


def native_enabled(spark) -> bool:
    """Whether this session reads ``s3://`` natively as ``s3a://``."""
    if os.environ.get("DATAFLOW_SPARK_S3A", "").lower() == "native":
        return True
    return spark.conf.get(NATIVE_CONF, "false").lower() == "true"


def s3a_settings(s3_options: dict[str, Any]) -> dict[str, str]:
    """Hadoop ``fs.s3a.*`` settings equivalent to s3fs options (endpoint, keys, path-style access)."""
    out: dict[str, str] = {}
    endpoint = s3_options.get("endpoint_url") or (s3_options.get("client_kwargs") or {}).get("endpoint_url")
    if endpoint:
        out["fs.s3a.endpoint"] = endpoint
        out["fs.s3a.path.style.access"] = "true"
        out["fs.s3a.connection.ssl.enabled"] = "true" if str(endpoint).startswith("https") else "false"
    if s3_options.get("key"):
        out["fs.s3a.access.key"] = str(s3_options["key"])
    if s3_options.get("secret"):
        out["fs.s3a.secret.key"] = str(s3_options["secret"])
    if s3_options.get("token"):
        out["fs.s3a.session.token"] = str(s3_options["token"])
        out["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    if s3_options.get("anon"):
        out["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    return out


def to_s3a(uri: str) -> str:
    """``s3://bucket/key`` -> ``s3a://bucket/key``."""
    return "s3a://" + uri.split("://", 1)[1]


def apply_settings(spark, settings: dict[str, str]) -> None:
    """Set Hadoop settings on the session (``spark._jsc`` is the only public route from Python)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)
