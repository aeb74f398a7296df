"""json_members: a frozen dataclass's JSON form, its fields in order by one set of rules."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum, StrEnum
from typing import Any

import pytest

from scope_tool.client import Phase, RefusalDetail
from scope_tool.wire._json_form import iso_time, json_members

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


class Colour(StrEnum):
    RED = "red"


class Size(Enum):
    LARGE = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Inner:
    name: str

    def to_json_dict(self) -> dict[str, Any]:
        return {"inner": self.name}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    text: str = "t"
    count: int = 2
    ratio: float = 0.5
    flag: bool = True
    missing: str | None = None
    colour: Colour = Colour.RED
    size: Size = Size.LARGE
    raw: bytes = b'{"a":[1,2]}'
    at: datetime = MOMENT
    names: tuple[str, ...] = ("x", "y")
    inners: tuple[Inner, ...] = (Inner(name="i"),)
    nested: Inner | None = Inner(name="n")


# Sample's fields as declared: the order its JSON members must keep.
FIELDS = (
    "text",
    "count",
    "ratio",
    "flag",
    "missing",
    "colour",
    "size",
    "raw",
    "at",
    "names",
    "inners",
    "nested",
)


def test_every_field_in_declaration_order_by_the_rules() -> None:
    shown = json_members(Sample())
    assert list(shown) == list(FIELDS)
    assert shown == {
        "text": "t",
        "count": 2,
        "ratio": 0.5,
        "flag": True,
        "missing": None,
        "colour": "red",
        "size": 3,
        "raw": {"a": [1, 2]},
        "at": "2026-01-02T03:04:05.678Z",
        "names": ["x", "y"],
        "inners": [{"inner": "i"}],
        "nested": {"inner": "n"},
    }
    assert json.loads(json.dumps(shown)) == shown


def test_an_enum_becomes_its_plain_value_not_the_member() -> None:
    shown = json_members(Sample())
    assert type(shown["colour"]) is str
    assert json_members(RefusalDetail(phase=Phase.FAILED))["phase"] == "FAILED"


def test_raw_bytes_that_are_not_json_stay_text() -> None:
    assert json_members(Sample(raw=b"not json"))["raw"] == "not json"


def test_empty_sequences_and_none_members() -> None:
    shown = json_members(Sample(names=(), inners=(), nested=None))
    assert shown["names"] == []
    assert shown["inners"] == []
    assert shown["nested"] is None


def test_a_keyword_gives_a_members_own_json() -> None:
    shown = json_members(Sample(), at="then", nested=None)
    assert shown["at"] == "then"
    assert shown["nested"] is None
    assert list(shown)[8] == "at"  # it keeps its field's place


def test_leave_out_drops_members_that_are_not_part_of_the_shape() -> None:
    shown = json_members(Sample(), leave_out=("raw", "size"))
    assert list(shown) == [name for name in FIELDS if name not in ("raw", "size")]


def test_a_keyword_naming_no_field_is_refused() -> None:
    with pytest.raises(TypeError, match="Sample has no field colur"):
        json_members(Sample(), colur="red")
    with pytest.raises(TypeError, match="Sample has no field rute"):
        json_members(Sample(), leave_out=("rute",))


def test_a_member_without_a_json_form_is_refused_by_name() -> None:
    @dataclass(frozen=True)
    class Odd:
        span: timedelta

    with pytest.raises(TypeError, match=r"Odd\.span: timedelta has no JSON form"):
        json_members(Odd(span=timedelta(seconds=1)))
    assert json_members(Odd(span=timedelta(seconds=1)), span=1.0) == {"span": 1.0}


def test_times_are_utc_with_milliseconds_and_naive_ones_are_utc() -> None:
    assert iso_time(MOMENT) == "2026-01-02T03:04:05.678Z"
    assert iso_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"
    two_hours_east = datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert iso_time(two_hours_east) == "2026-01-02T03:04:05.000Z"
    assert iso_time(None) is None


def test_refusal_detail_json_is_its_fields() -> None:
    detail = RefusalDetail(problem="bad", schema_path="", allowed_answerers=("a",))
    assert detail.to_json_dict() == {
        "problem": "bad",
        "schema_path": "",
        "allowed_answerers": ["a"],
        "pending_request_id": None,
        "suggestion": None,
        "phase": None,
    }
    assert RefusalDetail.from_json(detail.to_json_dict()) == detail
