"""SQL statements one single submission sends, counted in-process (Django's CaptureQueriesContext), with the
transaction commands among them; used by `bench.ingest` against its scratch database (the environment names it).

    DATABASE_URL=postgres://…/scratch python -m bench.submission_statements   # prints one JSON line

A helper, not a bench: it posts a few warm-up documents and then one more through Django's test client (the whole
request: token authentication, the view, the service, the commit and what runs after it in the request's
thread), with a token of its own.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRANSACTION_COMMANDS = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from registry import policy
    from registry.services.tokens import token_create

    user = User.objects.get_or_create(username="bench-statements")[0]
    user.groups.add(Group.objects.get_or_create(name=policy.least_role_for({"submit", "read"}))[0])
    _, plain = token_create(user=user, name="statements", scopes="submit,read")
    client = Client(HTTP_AUTHORIZATION=f"Token {plain}", HTTP_HOST="localhost")
    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    tag = f"statements-{time.time_ns()}"

    def post(i: int) -> int:
        doc = copy.deepcopy(base)
        doc["system"]["name"] = f"{tag}-{i}"
        return client.post("/api/v1/submissions", data=json.dumps(doc), content_type="application/json").status_code

    for i in range(3):  # imports, the token's first use (last_used_at), caches
        assert post(i) == 201
    with CaptureQueriesContext(connection) as captured:
        assert post(99) == 201
    sqls = [q["sql"].strip() for q in captured.captured_queries]
    commands = [s for s in sqls if s.upper().startswith(TRANSACTION_COMMANDS)]
    print(json.dumps({"statements": len(sqls), "transaction_commands": len(commands), "sql": sqls}))


if __name__ == "__main__":
    main()
