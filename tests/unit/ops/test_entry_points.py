"""Third-party ops register through the ``dataflow.ops`` entry-point group of an installed distribution."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_entry_point_op_is_found_by_name(tmp_path):
    pkg = tmp_path / "thirdparty_ops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from dataflow.ops import op

        @op(name="text.shout", modality="text", inputs=("text",), outputs=("text",), batch_format="row")
        def shout(row, *, marks: int = 1):
            """Upper-case and add exclamation marks.

            Args:
                marks: How many marks.
            """
            row["text"] = row["text"].upper() + "!" * marks
            return row
    '''))
    dist = tmp_path / "thirdparty_ops-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-ops\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dataflow.ops]\nshout = thirdparty_ops\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "from dataflow.ops import get_op\n"
        "print(get_op('text.shout')({'text': 'hi'}, marks=2)['text'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "HI!!"
