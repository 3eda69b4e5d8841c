"""Open op namespaces: ``video.*`` and plugin namespaces declare, run and plan; plugins load through entry points."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dataflow.errors import OpDefinitionError
from dataflow.ops import Modality, get_op, op
from tests.unit.plan.test_engines_and_handoffs import _plan

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "examples" / "plugin"


@op(name="video.frame_count", modality="video", inputs=("frames",), outputs=("frame_count",))
def frame_count(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Count the frames of each clip (a (frames, height, width, 3) array)."""
    batch["frame_count"] = np.array([len(clip) for clip in batch["frames"]], dtype=np.int64)
    return batch


@op(name="myplugin.video.first_frame", modality="video", inputs=("frames",), outputs=("image",))
def first_frame(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Keep the first frame of each clip as an image."""
    batch["image"] = _objects([clip[0] for clip in batch["frames"]])
    return batch


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _clips() -> dict[str, np.ndarray]:
    return {"frames": _objects([np.zeros((n, 4, 4, 3), dtype=np.uint8) for n in (3, 5)])}


def test_a_video_op_declares_registers_and_runs_on_a_plain_batch():
    assert get_op("video.frame_count") is frame_count and frame_count.modality is Modality.VIDEO
    assert list(frame_count(_clips())["frame_count"]) == [3, 5]
    assert first_frame(_clips())["image"][1].shape == (4, 4, 3)


def test_a_plugin_namespace_plans_like_its_modality():
    plan = _plan({"source": {"uri": "/d", "format": "jsonl"}, "steps": [{"op": "video.frame_count"}, {"op": "myplugin.video.first_frame"}]})
    assert plan.engine == "ray" and "auto: video steps run on Ray Data" in plan.engine_reason


@pytest.mark.parametrize(
    "name, modality, match",
    [
        ("Video.Cut", "video", "lower-case and dotted"),
        ("cut", "video", "lower-case and dotted"),
        ("video.cut", "image", "must equal the name's namespace 'video'"),
        ("doc.cut", "document", "modality must be one of image, audio, video, text, table"),
    ],
    ids=["upper-case", "no-namespace", "modality-namespace-mismatch", "unknown-modality"],
)
def test_namespace_and_modality_errors_name_the_rule(name, modality, match):
    def cut(batch):
        """Cut."""
        return batch

    with pytest.raises(OpDefinitionError, match=match):
        op(name=name, modality=modality, inputs=("x",), outputs=("x",))(cut)


def test_a_built_in_name_cannot_be_taken_by_another_module():
    def resize(batch):
        """Resize."""
        return batch

    with pytest.raises(OpDefinitionError, match="built-in op of dataflow.ops.image.resize"):
        op(name="image.resize", modality="image", inputs=("image",), outputs=("image",))(resize)


def _distribution(tmp_path: Path, name: str, entry_points: dict[str, str]) -> Path:
    """An installed-looking distribution: a dist-info folder with METADATA and entry_points.txt."""
    info = tmp_path / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[dataflow.ops]\n{lines}")
    return tmp_path


def _python(code: list[str], *paths: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)])}
    return subprocess.run([sys.executable, *code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_the_example_plugin_loads_through_its_entry_point_in_the_registry_and_the_cli(tmp_path):
    declared = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]["dataflow.ops"]
    site = _distribution(tmp_path, "dataflow-doc-ops", declared)
    code = (
        "import numpy as np; from dataflow.ops import all_ops, get_op\n"
        "print(get_op('doc.word_count')({'body': np.array(['a b c', '', None], dtype=object)}, column='body')['word_count'].tolist())\n"
        "print('doc.word_count' in [s.name for s in all_ops()])\n"
    )
    out = _python(["-c", code], site, PLUGIN)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[3,", "0,", "0]", "True"]
    shown = _python(["-m", "dataflow", "ops", "doc.word_count"], site, PLUGIN)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("doc.word_count") and "column (str, default 'text'): The text column to count." in shown.stdout


def test_a_broken_plugin_is_named_and_does_not_hide_built_in_ops(tmp_path):
    site = _distribution(tmp_path, "broken-ops", {"broken": "no_such_plugin_module"})
    code = (
        "from dataflow.ops import get_op\n"
        "print(get_op('text.normalize').name)\n"
        "get_op('doc.anything')\n"
    )
    out = _python(["-c", code], site)
    assert out.stdout.strip() == "text.normalize"
    assert "OpDefinitionError: dataflow.ops entry point 'broken = no_such_plugin_module' of broken-ops failed to load" in out.stderr
