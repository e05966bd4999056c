"""Commands refuse bad arguments in words, leaving nothing behind: found by running each with hostile arguments
(an export over a directory or into no directory was an OSError traceback; an empty --username made a user with no
name)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from registry.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("target", "words"), [("folder", "Is a directory"), ("nowhere/x.note", "No such file")])
def test_an_audit_export_that_cannot_be_written_says_where_and_leaves_no_temporary_file(
    tmp_path: Path, target: str, words: str
) -> None:
    (tmp_path / "folder").mkdir()
    out = tmp_path / target
    with pytest.raises(CommandError, match=f"cannot write {out}: {words}"):
        call_command("audit", "export", "--out", str(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


@pytest.mark.parametrize("username", ["", "   ", "a\x00b", "x" * 151])
def test_a_token_for_nobody_is_refused_and_makes_no_user(username: str) -> None:
    with pytest.raises(CommandError, match="--username must name someone"):
        call_command("create_token", "--username", username, "--scopes", "submit")
    assert not get_user_model().objects.exists() and not ApiToken.objects.exists()
