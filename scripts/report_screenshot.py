"""Regenerate docs/report.png, the README's screenshot of the HTML report the quickstart produces.

Runs ``examples/quickstart.py`` in a scratch folder (it generates its images and runs
``pipelines/thumbnails.yaml``), opens ``<workdir>/thumbs/_dataflow/report.html`` in headless
Chromium (Debian's ``chromium``; ``pip install -e '.[report]'`` for the websocket client) and
saves a full-page PNG.

Usage: python scripts/report_screenshot.py [--images 300] [--out docs/report.png] [--width 1200]
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=300, help="Images the quickstart generates.")
    parser.add_argument("--out", default=str(ROOT / "docs" / "report.png"), help="Where to write the PNG.")
    parser.add_argument("--width", type=int, default=1200, help="Page width in CSS pixels.")
    args = parser.parse_args()

    from dataflow.report.browser import HeadlessChromium

    with tempfile.TemporaryDirectory(prefix="dataflow-screenshot-") as work:
        cmd = [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--images", str(args.images), "--workdir", work]
        code = subprocess.call(cmd)
        if code != 0:
            print(f"quickstart failed (exit {code}); no screenshot written", file=sys.stderr)
            return code
        page_file = pathlib.Path(work) / "thumbs" / "_dataflow" / "report.html"
        with HeadlessChromium() as browser:
            page = browser.open(page_file.as_uri())
            if page.console_errors:
                print(f"the report logged errors: {page.console_errors}", file=sys.stderr)
                return 1
            png = page.screenshot(width=args.width)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png)
    print(f"wrote {out} ({len(png):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
