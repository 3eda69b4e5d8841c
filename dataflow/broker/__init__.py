"""The resource broker: one entry point over several clusters, borrowing idle capacity and giving it back.

``clusters`` reads clusters.yaml, ``capacity`` probes what is idle, ``placement`` chooses a cluster
with reasons, ``jobs`` runs pipelines through the Ray Job API, ``watch`` decides when to give a
borrowed cluster back, and ``remote_run`` ties them into ``dataflow run --cluster``. Capacity
arrives as data: no module here imports ray.data or pyspark.
"""
