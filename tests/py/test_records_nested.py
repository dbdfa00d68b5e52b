"""capbench.records for records inside records (issue 16, item 3): the method answers' goals and
sweep steps are read and written by the same conversion as the trial and run records."""

from __future__ import annotations

import dataclasses
import json

import pytest
from capbench import records
from capbench.records import RecordError


@dataclasses.dataclass(frozen=True)
class Part:
    name: str
    share: float = 0.0
    count: int | None = None


@dataclasses.dataclass(frozen=True)
class Whole:
    pps: float
    parts: tuple[Part, ...]
    rates: tuple[float, ...] = ()
    flag: bool = False
    schema: int = 1


def test_a_record_inside_a_record_round_trips():
    w = Whole(2.0, (Part("a", 0.5, 3), Part("b")), (1.0, 2.5))
    line = records.to_json(w)
    assert line == {"schema": 1, "pps": 2.0, "parts": [{"name": "a", "share": 0.5, "count": 3},
                                                       {"name": "b", "share": 0.0, "count": None}],
                    "rates": [1.0, 2.5], "flag": False}
    assert records.from_json(Whole, json.loads(json.dumps(line)), "toy") == w


def test_a_whole_number_in_a_float_field_is_read_as_a_float():
    w = records.from_json(Whole, {"pps": 2, "parts": [{"name": "a", "share": 1}], "rates": [3]}, "toy")
    assert w == Whole(2.0, (Part("a", 1.0),), (3.0,))
    assert [type(x) for x in (w.pps, w.parts[0].share, w.rates[0])] == [float] * 3
    assert json.dumps(records.to_json(w)) == json.dumps(records.to_json(Whole(2.0, (Part("a", 1.0),), (3.0,))))


@pytest.mark.parametrize("line, why", [
    ({"pps": "1", "parts": []}, 'pps is "1", not float'),
    ({"pps": 1.0, "parts": [{"name": 3}]}, "parts[0].name is 3, not str"),
    ({"pps": 1.0, "parts": [{"name": "a"}, {"name": "b", "count": 1.5}]}, "parts[1].count is 1.5, not int | None"),
    ({"pps": 1.0, "parts": [[1]]}, "parts[0] is [1], not an object"),
    ({"pps": 1.0, "parts": {"name": "a"}}, 'parts is {"name": "a"}, not'),
    ({"pps": 1.0, "parts": [], "flag": 1}, "flag is 1, not bool"),
])
def test_a_field_of_another_type_is_named_where_it_stands(line, why):
    assert records.fields_problem(Whole, line).startswith(why)
    assert records.conforms(line, Whole) is False


def test_a_missing_field_inside_is_one_line():
    with pytest.raises(RecordError, match=r"^not a capbench toy: .*'name'$"):
        records.from_json(Whole, {"pps": 1.0, "parts": [{"share": 1.0}]}, "toy")


def test_filled_takes_the_default_else_the_empty_value():
    out = records.filled(Whole, {"pps": None, "parts": [{"share": None}, {"name": "b", "count": None}],
                                 "flag": None})
    assert out == {"pps": 0.0, "parts": [{"name": "", "share": 0.0, "count": None},
                                         {"name": "b", "share": 0.0, "count": None}],
                   "rates": (), "flag": False, "schema": 1}
    assert records.fields_problem(Whole, out) is None
    assert records.from_json(Whole, out, "toy") == Whole(0.0, (Part(""), Part("b")))
