"""Engines: each lowers a logical plan to its own job and runs it. Only here are ray and pyspark imported."""
