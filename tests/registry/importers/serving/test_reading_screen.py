"""The C-speed screen before the bounds walk (registry/importers/serving/reading.py, `plainly_bounded`): it may
clear only text that no bound can fail. Every kind of hostile text the walk refuses must also fail the screen, in
every encoding json.loads reads, or the import would store it (issue 41, items 2 and 5)."""

from __future__ import annotations

import json

import pytest

from registry.importers.serving.errors import ServingImportError
from registry.importers.serving.reading import json_value, plainly_bounded

RECORD = {"metadata": {"x_request_id": "0e071f"}, "metrics": {"request_latency": {"value": 1.5e3, "unit": "ms"}}}
HOSTILE = {
    "NaN": '{"metrics": {"itl": [NaN, NaN]}}',
    "Infinity": '{"metrics": {"itl": -Infinity}}',
    "a float beyond the largest double": '{"metrics": {"itl": 1e400}}',
    "a float beyond the largest double, exponent with a sign": '{"itl": [2.5E+308]}',
    "an integer beyond the largest double": '{"completed": ' + "9" * 400 + "}",
    "a long mantissa times a 2-digit exponent": '{"itl": ' + "1" + "0" * 299 + ".5e10}",
    "a whole text that is a number beyond the largest double": "1e400",
    "a negative number beyond the largest double in an array": '{"itl": [1.0, -1.5E+400]}',
    "a number beyond the largest double after a space": '{"itl":\t 17e0308}',
    "an escaped NUL": '{"name": "a\\u0000b"}',
    "an escaped lone surrogate": '{"name": "\\ud800"}',
    "an escaped lone surrogate in a key": '{"\\uDC00": 1}',
    "nesting past the bound": '{"deep": ' + "[" * 70 + "]" * 70 + "}",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-32-le"])
def test_hostile_text_is_not_cleared_by_the_screen_and_is_refused(text, encoding):
    raw = text.encode(encoding)
    assert not plainly_bounded(raw)
    with pytest.raises(ServingImportError):
        json_value(raw, "file.json")


def test_a_string_holding_a_lone_surrogate_is_walked_not_cleared():
    text = '{"name": "\ud800"}'
    assert not plainly_bounded(text)
    with pytest.raises(ServingImportError, match="/name"):
        json_value(text, "file.json")


def test_a_plain_record_is_cleared_and_read_as_json_reads_it():
    raw = json.dumps(RECORD).encode()
    assert plainly_bounded(raw)
    assert json_value(raw, "file.jsonl", 3) == RECORD


def test_brackets_inside_strings_can_only_send_text_to_the_walk():
    deep_looking = json.dumps({"text": "[" * 70}).encode()
    assert not plainly_bounded(deep_looking)
    assert json_value(deep_looking, "file.json") == {"text": "[" * 70}
