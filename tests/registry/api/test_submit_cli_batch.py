"""`benchreg submit` of several files sends NDJSON batches to a real (live) registry."""

from __future__ import annotations

import copy
import json

import pytest

from registry import cli
from registry.models import AuditEntry, Submission
from registry.services.tokens import token_create


@pytest.mark.django_db(transaction=True)
def test_submit_sends_many_files_in_batches_and_says_what_became_of_each(
    live_server, user, server_example, tmp_path, capsys
):
    token = token_create(user=user, name="cli", scopes="submit")[1]
    files = []
    for i in range(7):
        document = copy.deepcopy(server_example)
        document["system"]["name"] = f"cli-node-{i}"
        if i == 3:
            document["phase"] = "serving"
        path = tmp_path / f"run-{i}.json"
        path.write_text(json.dumps(document, indent=2))  # pretty-printed: line breaks inside the document
        files.append(path)
    files.append(files[0])  # the same document twice: known the second time
    files.append(tmp_path / "missing.json")
    status = cli.main(["submit", *map(str, files), "--server", live_server.url, "--token", token, "--batch-size", "3"])
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if not line.startswith(" ")]  # a file's line; its problems follow, indented
    assert status == 2  # an unreadable file outranks the refused one
    assert [line.split(": ")[0] for line in lines] == [str(f) for f in files]
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == (
        ["stored"] * 3 + ["rejected"] + ["stored"] * 3 + ["already", "error"]
    )
    assert lines[3].endswith("rejected (1 problem):")
    assert out[out.index(lines[3]) + 1].startswith("  /phase: ")  # the pointer first, on a line of its own
    assert Submission.objects.count() == 6 == AuditEntry.objects.filter(kind="run.submitted").count()
