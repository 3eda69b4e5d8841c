"""Reports people look at: the HTML run report of a sink, notebook displays and previews.

``html`` renders ``<sink>/_dataflow/report.html`` at commit (and again with ``dataflow report
SINK --rerender``); ``notebook`` and ``preview`` hold what Jupyter shows; ``status`` is the
one-line progress an engine without progress bars prints; ``browser`` drives headless Chromium
for the report's browser check and the README screenshot.
"""
from dataflow.report.notebook import ReportView, show_report
from dataflow.report.preview import Outcome, PreviewRows

__all__ = ["Outcome", "PreviewRows", "ReportView", "show_report"]
