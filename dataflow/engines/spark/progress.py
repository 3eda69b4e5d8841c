"""A status line for Spark runs: poll ``SparkContext.statusTracker()`` while the run's jobs execute.

Spark's console progress bar is off in the sessions dataflow starts (it garbles logs), so the
engine runs its jobs in a job group of their own and a daemon thread sums the finished and total
tasks of that group's stages, printing them through ``StatusLine`` (redrawn on a terminal, a line
every few seconds elsewhere, and the final count when the run ends).
"""
from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager
from typing import Iterator, TextIO

from py4j.protocol import Py4JError

from dataflow.runtime.status import StatusLine

__all__ = ["group_tasks", "spark_progress"]

_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def group_tasks(tracker, group: str) -> tuple[int, int]:
    """Finished and total tasks of the stages of ``group``'s jobs.

    Stages of a finished job that never ran a task were skipped (their shuffle output was reused)
    and are left out of the total.

    Args:
        tracker: ``SparkContext.statusTracker()``.
        group: The job group.
    """
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None or (job.status != "RUNNING" and stage.numCompletedTasks == 0 and stage.numActiveTasks == 0):
                continue
            done += stage.numCompletedTasks
            total += stage.numTasks
    return done, total


class _Poller(threading.Thread):
    def __init__(self, tracker, group: str, line: StatusLine, poll_s: float):
        super().__init__(name="dataflow-spark-progress", daemon=True)
        self.tracker, self.group, self.line, self.poll_s = tracker, group, line, poll_s
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.poll_s):
            try:
                done, total = group_tasks(self.tracker, self.group)
            except Py4JError:
                return  # the session is shutting down: the status line is not worth an error
            if total:
                self.line.update(done, total)


@contextmanager
def spark_progress(spark, enabled: bool = True, stream: TextIO | None = None, poll_s: float = 0.5, interval: float = 5.0) -> Iterator[None]:
    """Run the body's Spark jobs in a job group of their own and print their task progress.

    Args:
        spark: The SparkSession the body uses (from this thread: job groups are per thread).
        enabled: False prints nothing and leaves the job group alone (``--quiet``).
        stream: Where the line goes (stderr by default).
        poll_s: Seconds between polls of the status tracker.
        interval: Seconds between printed lines when the stream is not a terminal.

    Examples:
        >>> with spark_progress(spark, enabled=options.progress):  # doctest: +SKIP
        ...     frames.output.write.parquet(path)
    """
    if not enabled:
        yield
        return
    sc = spark.sparkContext
    previous = {key: sc.getLocalProperty(key) for key in _GROUP_PROPERTIES}
    group = f"dataflow-{uuid.uuid4().hex[:12]}"
    sc.setJobGroup(group, "dataflow run")
    line = StatusLine("spark", stream=stream, interval=interval)
    poller = _Poller(sc.statusTracker(), group, line, poll_s)
    poller.start()
    try:
        yield
    finally:
        poller.stopped.set()
        poller.join()
        done, total = group_tasks(sc.statusTracker(), group)
        if total:
            line.update(done, total, force=True)
        line.close()
        for key, value in previous.items():
            sc.setLocalProperty(key, value)
