"""Compiled validators kept on disk (protocol/schema.py, `fast_validator`): a later process loads the code instead
of compiling 1.3 MB of generated Python (0.9 s of every import, issue 41 item 5). What is loaded must be what a
fresh compile gives; a torn or foreign file is compiled anew, and a folder that cannot be written is no error."""

from __future__ import annotations

import copy
from pathlib import Path

import fastjsonschema
import pytest

from protocol import schema

SCHEMA = schema.minor_schema("1.2")


def _cached_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("validator-*.marshal"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(schema.CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _refuses(validate, document) -> str:
    with pytest.raises(fastjsonschema.JsonSchemaException) as refused:
        validate(document)
    return str(refused.value)


def test_a_second_process_loads_the_validator_without_compiling_it(cache, monkeypatch):
    first = schema.compiled_validator(SCHEMA)
    assert len(_cached_files(cache)) == 1

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again although the cache holds it")

    monkeypatch.setattr(fastjsonschema, "compile_to_code", no_compile)
    again = schema.compiled_validator(SCHEMA)
    fresh = fastjsonschema.compile(copy.deepcopy(SCHEMA))
    for document in ({}, {"protocol": 5}, {"protocol": "benchreg/1.2", "unknown": 1}):
        assert _refuses(again, document) == _refuses(fresh, document) == _refuses(first, document)


def test_a_torn_or_altered_cache_file_is_compiled_anew(cache):
    schema.compiled_validator(SCHEMA)
    (path,) = _cached_files(cache)
    raw = path.read_bytes()
    for damaged in (raw[: len(raw) // 2], raw[:32] + raw[33:] + b"x", b""):
        path.write_bytes(damaged)
        validate = schema.compiled_validator(SCHEMA)
        assert "must" in _refuses(validate, {})
        assert path.read_bytes() == raw  # rewritten whole


def test_another_schema_gets_another_file_never_a_stale_validator(cache):
    schema.compiled_validator(SCHEMA)
    changed = copy.deepcopy(SCHEMA)
    changed["minProperties"] = 999
    validate = schema.compiled_validator(changed)
    assert len(_cached_files(cache)) == 2
    assert "999" in _refuses(validate, {})
    assert "999" not in _refuses(schema.compiled_validator(SCHEMA), {})


def test_a_folder_that_cannot_be_written_still_validates(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(schema.CACHE_DIR_ENV, str(blocked / "cache"))
    assert "must" in _refuses(schema.compiled_validator(SCHEMA), {})


def test_an_empty_cache_setting_keeps_nothing_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv(schema.CACHE_DIR_ENV, "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert schema.validator_cache_dir() is None
    schema.compiled_validator(SCHEMA)
    assert not list(tmp_path.rglob("validator-*"))


def test_the_cache_folder_is_the_users_own(tmp_path, monkeypatch):
    monkeypatch.delenv(schema.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert schema.validator_cache_dir() == tmp_path / "xdg" / "benchreg"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert schema.validator_cache_dir() == tmp_path / "home" / ".cache" / "benchreg"
    schema.compiled_validator(SCHEMA)
    assert (tmp_path / "home" / ".cache" / "benchreg").stat().st_mode & 0o077 == 0
