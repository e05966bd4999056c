"""Shared fixtures. Tests marked `postgres`, `services` or `browser` need the real thing; with
BENCHREG_REQUIRE_SERVICES=1 (CI) skipping one of them is a failure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "protocol" / "examples"
SHARED = ROOT.parent / "shared"


def _broker_of_this_test_worker() -> None:
    """Give each pytest-xdist worker a Redis database of its own (gw0 the one named, gw1 the one below, ...).

    Tests that start a registry Celery worker consume the default queue, and one purges it at its start: two such
    tests running at once on one database would take (or delete) each other's tasks, whose rows live in the other
    worker's test database. Module-level reads of BENCHREG_TEST_BROKER_URL see the adjusted value, as this conftest
    is imported first.
    """
    url, worker = os.environ.get("BENCHREG_TEST_BROKER_URL", ""), os.environ.get("PYTEST_XDIST_WORKER", "")
    base, _, db = url.rpartition("/")
    if base and db.isdigit() and worker.startswith("gw") and worker[2:].isdigit():
        os.environ["BENCHREG_TEST_BROKER_URL"] = f"{base}/{(int(db) - int(worker[2:])) % 16}"


_broker_of_this_test_worker()


@pytest.fixture(autouse=True)
def _agent_work_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Agent jobs (in-process, embedded, or a worker process started by a test) write their files in a folder of
    this test's own: job ids of concurrent test databases coincide, and two of them in one folder would take each
    other's files."""
    folder = tmp_path_factory.mktemp("agent-work")
    monkeypatch.setenv("BENCHREG_AGENT_WORK_DIR", str(folder))
    return folder


def _live_server_without_nagle() -> None:
    """The tests' live server (Django's ThreadedWSGIServer, as pytest-django's `live_server` starts it) sends each
    response's status line, headers and body in separate writes; with Nagle's algorithm on, the last write waits for
    the client's delayed ACK, 40 ms on Linux, so every request to it took at least ~45 ms (measured: GET /healthz
    45.9 ms with Nagle, 1.1 ms without). The contract test's 2,795 requests alone waited ~2 minutes. gunicorn, which
    `benchreg serve` runs, already sets TCP_NODELAY on its sockets; this gives the test server the same."""
    from django.core.servers.basehttp import ThreadedWSGIServer
    from django.test.testcases import LiveServerThread

    class NoDelayWSGIServer(ThreadedWSGIServer):
        def get_request(self) -> tuple[socket.socket, Any]:
            connection, address = super().get_request()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return connection, address

    LiveServerThread.server_class = NoDelayWSGIServer


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing(django_test_environment: None) -> None:
    """Hash the tests' passwords cheaply (tests/hashers.py); checking still accepts the production hasher's hashes."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["tests.hashers.FastPBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]
    _live_server_without_nagle()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """On PostgreSQL, the test database commits without waiting for its WAL flush (synchronous_commit=off): a
    crash could lose the last commits of a database the run throws away, and nothing else changes (isolation,
    constraints and triggers are the same). The suite commits tens of thousands of transactions."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    if default["ENGINE"].endswith("postgresql"):
        options = default.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c synchronous_commit=off".strip()


def load_example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


@pytest.fixture
def server_example() -> dict[str, Any]:
    return load_example("inference-server-h100-bf16")


@pytest.fixture
def offline_example() -> dict[str, Any]:
    return load_example("inference-offline-cpu-int8")


@pytest.fixture
def training_example() -> dict[str, Any]:
    return load_example("training-h100-bf16")


def _database_vendor() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"


SERVICE_MARKERS = ("postgres", "services", "browser")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI (BENCHREG_REQUIRE_SERVICES=1) a skipped service-backed test is a failure, not a shrug."""
    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and os.environ.get("BENCHREG_REQUIRE_SERVICES") == "1"
        and any(m in item.keywords for m in SERVICE_MARKERS)
    ):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where {', '.join(SERVICE_MARKERS)} tests must run: {report.longrepr}"


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Run the modules holding a `slow` test first, each kept whole (its module-scoped fixtures are built once).

    pytest-xdist hands out tests in this order and keeps only a couple queued per worker, so a long test collected
    last would run alone at the end while the other worker waits; started first, the short tests fill around it.
    """
    slow = {item.module for item in items if isinstance(item, pytest.Function) and "slow" in item.keywords}
    items.sort(key=lambda item: getattr(item, "module", None) not in slow)  # stable: the order is otherwise kept


# What makes a test's outcome depend on the database engine: the database fixtures, or (read from the module's
# source) a process, command or connection of its own that opens the database.
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}
)
DATABASE_WORDS = (
    "subprocess",
    "Popen",
    "call_command",
    "DATABASE_URL",
    "sys.executable",
    "multiprocessing",
    "connection",
)


def _uses_the_database(item: pytest.Item, sources: dict[Any, bool]) -> bool:
    if item.get_closest_marker("django_db") or item.get_closest_marker("embedded"):
        return True
    if DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    if module not in sources:
        path = getattr(module, "__file__", None)
        text = Path(path).read_text() if path else ""
        sources[module] = not path or any(word in text for word in DATABASE_WORDS)
    return sources[module]


def _only_database_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """BENCHREG_ONLY_DATABASE_TESTS=1 (CI's second pass, on SQLite, after the whole suite ran on PostgreSQL): keep
    the tests whose outcome can depend on the database engine. The others run the same code on either engine, and
    the first pass ran every one of them; a module that starts a process or a command of its own is kept whole."""
    if os.environ.get("BENCHREG_ONLY_DATABASE_TESTS") != "1":
        return
    sources: dict[Any, bool] = {}
    kept = [item for item in items if _uses_the_database(item, sources)]
    dropped = [item for item in items if not _uses_the_database(item, sources)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _only_database_tests(config, items)
    _slow_modules_first(items)
    if _database_vendor() == "postgresql":
        return
    required = os.environ.get("BENCHREG_REQUIRE_SERVICES") == "1"
    for item in items:
        if "postgres" in item.keywords:
            if required:
                raise pytest.UsageError("BENCHREG_REQUIRE_SERVICES=1 but DATABASE_URL is not PostgreSQL")
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))


@pytest.fixture
def endpoint() -> Iterator[Callable[..., str]]:
    """The simulated serving endpoint, for the serving runner's tests and the CLI's: start(*args) runs
    `python -m runners.serving.simulated --port 0 *args` and returns its base URL."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        cmd = [sys.executable, "-m", "runners.serving.simulated", "--port", "0", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving" in line, line
        return line.rsplit(" ", 1)[-1].strip()

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(10)
