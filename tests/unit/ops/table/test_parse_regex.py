"""table.parse_regex: named groups of a pattern become columns (syslog lines)."""
from __future__ import annotations

import pydantic
import pytest

from dataflow.errors import RowError
from dataflow.ops.table.parse_regex import java_pattern, parse_regex

PATTERN = r"(?P<switch>sw\d+) %(?P<facility>[A-Z]+)-\d-(?P<event>\w+):(?:.* (?P<port>Eth\S+))?"


def test_groups_become_columns_and_a_missing_group_is_null():
    line = "sw3 %ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface Eth1/12 is down"
    assert parse_regex({"text": line}, pattern=PATTERN) == [{"switch": "sw3", "facility": "ETHPORT", "event": "IF_DOWN_LINK_FAILURE", "port": "Eth1/12"}]
    assert parse_regex({"text": "sw1 %PLATFORM-4-OpticalRemoveActivate: reseated"}, pattern=PATTERN)[0]["port"] is None


def test_mismatches_are_errors_drops_or_nulls():
    with pytest.raises(RowError, match="does not match the pattern"):
        parse_regex({"text": "login ok"}, pattern=PATTERN)
    assert parse_regex({"text": "login ok"}, pattern=PATTERN, on_mismatch="drop") == []
    assert parse_regex({"text": None}, pattern=PATTERN, on_mismatch="null")[0]["event"] is None


def test_java_pattern_keeps_group_numbers():
    plain, groups = java_pattern(PATTERN)
    assert "(?P<" not in plain and groups == {"switch": 1, "facility": 2, "event": 3, "port": 4}


@pytest.mark.parametrize(
    "pattern, message",
    [("no groups", "needs at least one named group"), ("(?P<Bad>x)", "snake_case"), ("(?P<a>x)(?P=a)", "named backreferences"), ("(?P<a>x", "invalid regular expression")],
    ids=["no-groups", "bad-name", "backreference", "does-not-compile"],
)
def test_bad_patterns_are_rejected(pattern, message):
    with pytest.raises(pydantic.ValidationError, match=message):
        parse_regex.params(pattern=pattern)


def test_named_patterns_first_match_wins_and_names_the_format():
    vendors = {"nxos": r"%[A-Z]+-\d-(?P<event>[A-Z_]+): Interface (?P<port>Ethernet\S+)", "vrp": r"%%\d+\w+/\d/(?P<event>\w+)\(\w\)\[\d+\]:.*?(?P<port>\d+GE\S+?)\)"}
    nxos = "%ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface Ethernet1/7 is down (Link failure)"
    vrp = "%%01DEVM/2/OpticalRemoveActivate(l)[16]:Optical module has been removed. (EntityName=100GE1/0/7)"
    assert parse_regex({"text": nxos}, pattern=vendors, pattern_column="vendor") == [{"event": "IF_DOWN_LINK_FAILURE", "port": "Ethernet1/7", "vendor": "nxos"}]
    assert parse_regex({"text": vrp}, pattern=vendors, pattern_column="vendor") == [{"event": "OpticalRemoveActivate", "port": "100GE1/0/7", "vendor": "vrp"}]
    assert parse_regex({"text": "login"}, pattern=vendors, on_mismatch="null") == [{"event": None, "port": None, "pattern": None}]
    with pytest.raises(pydantic.ValidationError, match="needs at least one named group"):
        parse_regex.params(pattern={"a": "(?P<x>a)", "b": "no groups"})
