"""DraftJpegDecodes on hand-built plans: it fires only when nothing between needs full pixels."""
from __future__ import annotations

from dataflow.dsl.parse import parse_pipeline
from dataflow.plan import build_plan
from dataflow.plan.nodes import FusedMap, Step
from dataflow.plan.rules import DEFAULT_RULES, FuseAdjacentMaps
from dataflow.plan.rules_media import DraftJpegDecodes


def _plan(*steps):
    spec = parse_pipeline({"name": "p", "source": {"uri": "/in", "format": "image"}, "steps": list(steps), "sink": {"uri": "/out"}})
    return build_plan(spec)


def _decode(plan):
    for node in plan.nodes:
        for step in (node.steps if isinstance(node, FusedMap) else (node,) if isinstance(node, Step) else ()):
            if step.op.name == "image.decode":
                return step.params


def test_decode_then_resize_drafts_to_the_resize_bound():
    plan = DraftJpegDecodes().apply(_plan({"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 256}}, {"op": "image.phash"}))
    assert _decode(plan).draft_max_side == 256


def test_it_also_works_on_fused_plans():
    plan = DraftJpegDecodes().apply(FuseAdjacentMaps().apply(_plan({"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 128}})))
    assert isinstance(plan.nodes[1], FusedMap) and _decode(plan).draft_max_side == 128


def test_a_step_that_reads_pixels_or_size_in_between_blocks_it():
    for between in ({"op": "image.filter_blur"}, {"op": "image.filter_size", "params": {"min_side": 64}}):
        plan = DraftJpegDecodes().apply(_plan({"op": "image.decode"}, between, {"op": "image.resize", "params": {"max_side": 256}}))
        assert _decode(plan).draft_max_side is None


def test_size_mode_opt_out_and_explicit_values_are_left_alone():
    size_mode = DraftJpegDecodes().apply(_plan({"op": "image.decode"}, {"op": "image.resize", "params": {"size": 200}}))
    opt_out = DraftJpegDecodes().apply(_plan({"op": "image.decode", "params": {"auto_draft": False}}, {"op": "image.resize"}))
    explicit = DraftJpegDecodes().apply(_plan({"op": "image.decode", "params": {"draft_max_side": 64}}, {"op": "image.resize"}))
    assert _decode(size_mode).draft_max_side is None
    assert _decode(opt_out).draft_max_side is None
    assert _decode(explicit).draft_max_side == 64


def test_rule_is_registered_in_the_default_rules():
    assert any(isinstance(r, DraftJpegDecodes) for r in DEFAULT_RULES)
