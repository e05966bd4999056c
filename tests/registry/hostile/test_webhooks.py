"""Outbound webhooks, tried as an attacker would: no delivery reaches a non-global address (literal, by name, by a
name that resolves elsewhere by delivery time, or by a redirect) unless the operator allows its network; no
credentials in webhook addresses; only those who may submit register one; one attempt has a total deadline and
reads a bounded number of bytes; the audit log publishes nothing a port scan could use; a failing receiver never
breaks the caller's work and no delivery stays pending unseen.

Every "nothing was sent" below is checked on a real receiver listening where the request would have gone."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from registry.celery import app
from registry.models import AuditEntry, Decision, WebhookDelivery
from registry.services import webhooks
from registry.services.webhooks import webhook_enqueue, webhook_secret_new, webhook_url_problem, webhooks_sweep
from tests.registry.hostile.people import person, signed_in, with_token

QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"1x H100": 98.0}},
}


class _Receiver(BaseHTTPRequestHandler):
    """Records every request; answers with the server's `answer` (status, extra headers)."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))  # type: ignore[attr-defined]
        status, headers = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class Receiver:
    def __init__(self, host: str = "127.0.0.1", status: int = 204, headers: dict[str, str] | None = None) -> None:
        self.server = ThreadingHTTPServer((host, 0), _Receiver)
        self.server.received = []  # type: ignore[attr-defined]
        self.server.answer = (status, headers or {})  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def received(self) -> list[Any]:
        return self.server.received  # type: ignore[attr-defined,no-any-return]

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _deliver(url: str, secret: str | None = None) -> WebhookDelivery:
    """Record and deliver one event now (in-process, as without a broker), as a matching run would."""
    delivery = webhook_enqueue(
        url=url,
        secret=webhook_secret_new() if secret is None else secret,
        event="decision.evidence_changed",
        body={"decision": 1},
    )
    from registry.tasks.webhooks import deliver_webhook

    deliver_webhook.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    return delivery


# --- the one validator --------------------------------------------------------------------------------------

REFUSED = [
    "http://127.0.0.1/hook",
    "http://127.1.2.3:8000/",
    "http://[::1]/",
    "http://0.0.0.0:80/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.7/",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:1::]/",
    "http://224.0.0.1/",
    "http://localhost:8000/",
    "http://LOCALHOST./x",
    "http://2130706433/",
    "http://0x7f.1/",
    "https://user:pw@hooks.example.org/hook",
    "https://token@hooks.example.org/",
    "https://:pw@93.184.216.34/",
    "ftp://93.184.216.34/",
    "http:///nohost",
    "http://93.184.216.34:99999/",
]


@pytest.mark.parametrize("url", REFUSED)
def test_the_validator_refuses_every_internal_destination_and_credentials(url: str) -> None:
    assert webhook_url_problem(url), url


@pytest.mark.parametrize(
    "url",
    [
        "https://93.184.216.34/hook",
        "http://[2606:2800:220:1:248:1893:25c8:1946]/",
        "https://hooks.example.org/services/T0123",
    ],
)  # a name not resolvable here: checked
def test_the_validator_accepts_global_destinations(url: str) -> None:  # again at connect time
    assert webhook_url_problem(url) is None


def test_an_operator_allows_an_internal_network_explicitly(settings: Any) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8", "10.20.0.0/16"]
    assert webhook_url_problem("http://127.0.0.1:9/") is None
    assert webhook_url_problem("http://localhost:9/") is None
    assert webhook_url_problem("http://10.20.1.1/") is None
    assert webhook_url_problem("http://10.21.1.1/")  # only what was listed
    assert webhook_url_problem("http://u:p@127.0.0.1/")  # credentials stay refused


# --- who may register one, and what -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["viewer", "read-only token of a submitter", "read-only token of an admin"])
def test_only_those_who_may_submit_register_a_webhook(who: str) -> None:
    if who == "viewer":
        client = signed_in(person("viewer"))
    else:
        client = with_token(person("submitter" if "submitter" in who else "admin"), "read")
    body = {"title": "t", "question": QUESTION, "webhook_url": "https://93.184.216.34/hook"}
    response = client.post("/api/v1/decisions", body, format="json")
    assert response.status_code == 403, response.content
    assert response["content-type"].startswith("application/problem+json")
    assert not Decision.objects.exists()
    del body["webhook_url"]  # a decision without a webhook stays theirs to declare
    assert client.post("/api/v1/decisions", body, format="json").status_code == 201


@pytest.mark.django_db
def test_submitters_and_admins_may_register_one() -> None:
    for role, allowed in (("viewer", False), ("submitter", True), ("admin", True)):
        client = signed_in(person(role))
        response = client.post(
            "/api/v1/decisions",
            {"title": "t", "question": QUESTION, "webhook_url": "https://93.184.216.34/hook"},
            format="json",
        )
        assert (response.status_code == 201) is allowed, (role, response.content)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost/",
        "http://169.254.169.254/latest/meta-data/",
        "https://user:pw@93.184.216.34/",
    ],
)
def test_a_submitter_registering_an_internal_or_credentialed_address_gets_422_with_its_pointer(url: str) -> None:
    response = signed_in(person("submitter")).post(
        "/api/v1/decisions", {"title": "t", "question": QUESTION, "webhook_url": url}, format="json"
    )
    assert response.status_code == 422, response.content
    error = response.json()["errors"][0]
    assert error["pointer"] == "/webhook_url" and error["code"] == "undeliverable-address"
    assert not Decision.objects.exists()


@pytest.mark.django_db
def test_the_decisions_page_refuses_an_internal_address_with_a_form_error() -> None:
    client = APIClient(SERVER_NAME="localhost")
    client.force_login(person("submitter"))
    form = {
        "title": "t",
        "workload": "decoder-small",
        "scenario": "server",
        "demand": "100",
        "demand_unit": "tokens/s",
        "webhook_url": "http://169.254.169.254/latest/",
    }
    response = client.post("/decisions/", form)
    assert response.status_code == 400 and b"not a global address" in response.content
    viewer = APIClient(SERVER_NAME="localhost")
    viewer.force_login(person("viewer"))
    response = viewer.post("/decisions/", {**form, "webhook_url": "https://93.184.216.34/"})
    assert response.status_code == 400 and b"may submit runs may register a webhook" in response.content
    assert not Decision.objects.exists()


# --- delivery: the connect-time check -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
def test_nothing_is_sent_to_loopback_without_the_allow_list(receiver: Receiver, host: str) -> None:
    """A delivery row for a loopback address (registered before this check, or by a rebinding name) is refused at
    connect time: the receiver listening there gets nothing, and the delivery fails at once, not retried."""
    delivery = _deliver(receiver.url(host))
    assert receiver.received == []
    assert delivery.state == "failed" and delivery.attempts == 1 and delivery.last_status is None
    assert "not a global address" in delivery.last_error


@pytest.mark.django_db
def test_a_name_that_resolves_elsewhere_by_delivery_time_is_refused(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name resolves to a global address when registered, to loopback when delivered to."""
    answers = iter([["93.184.216.34"]])
    monkeypatch.setattr(webhooks, "_resolve", lambda host, port: next(answers, ["127.0.0.1"]))
    url = f"http://rebind.example:{receiver.port}/hook"
    response = signed_in(person("submitter")).post(
        "/api/v1/decisions", {"title": "t", "question": QUESTION, "webhook_url": url}, format="json"
    )
    assert response.status_code == 201, response.content
    delivery = _deliver(url)
    assert receiver.received == [] and delivery.state == "failed"
    assert "rebind.example resolves to 127.0.0.1" in delivery.last_error


@pytest.mark.django_db
def test_one_internal_address_among_global_ones_is_refused(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhooks, "_resolve", lambda host, port: ["93.184.216.34", "127.0.0.1"])
    delivery = _deliver(f"http://mixed.example:{receiver.port}/hook")
    assert receiver.received == [] and delivery.state == "failed"


@pytest.mark.django_db
def test_proxies_from_the_environment_are_not_used(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A proxy would be the peer the check sees; deliveries go straight to the receiver."""
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    proxy = Receiver()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url())
        monkeypatch.setenv("ALL_PROXY", proxy.url())
        delivery = _deliver(receiver.url())
        assert delivery.state == "delivered" and len(receiver.received) == 1 and proxy.received == []
    finally:
        proxy.close()


@pytest.mark.django_db
def test_an_allowed_internal_receiver_gets_the_signed_event_but_a_redirect_is_not_followed(settings: Any) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    target = Receiver()
    hop = Receiver(status=307, headers={"location": target.url()})
    try:
        delivery = _deliver(hop.url())
        assert len(hop.received) == 1 and target.received == []
        assert delivery.state == "failed" and delivery.last_error == "answered HTTP 307"
        ok = _deliver(target.url())
        assert ok.state == "delivered" and ok.last_status == 204 and len(target.received) == 1
        assert "authorization" not in target.received[0][1]
    finally:
        target.close()
        hop.close()


# --- bounded attempts ---------------------------------------------------------------------------------------


class _Hostile(threading.Thread):
    """A raw TCP receiver: `drip` sends a status line then one header byte every 0.3 s; `flood` sends headers
    without end."""

    def __init__(self, mode: str) -> None:
        super().__init__(daemon=True)
        self.mode, self.stop = mode, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sent = 0

    def run(self) -> None:
        conn, _ = self.sock.accept()
        conn.settimeout(5)
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not self.stop.is_set():
                if self.mode == "drip":
                    conn.sendall(b"X")
                    self.stop.wait(0.3)
                else:
                    conn.sendall(b"X-Filler: " + b"y" * 1000 + b"\r\n")
                    self.sent += 1012
        except OSError:
            pass
        finally:
            conn.close()
            self.sock.close()


@pytest.mark.django_db
@pytest.mark.parametrize(("mode", "words"), [("drip", "deadline"), ("flood", "exceeds 4096 bytes")])
def test_one_attempt_ends_at_its_deadline_and_reads_a_bounded_answer(settings: Any, mode: str, words: str) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.BENCHREG_WEBHOOK_DEADLINE_S = 2
    settings.BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES = 4096
    peer = _Hostile(mode)
    peer.start()
    delivery = webhook_enqueue(
        url=f"http://127.0.0.1:{peer.port}/hook", secret=webhook_secret_new(), event="e", body={}
    )
    started = time.monotonic()
    try:
        webhooks.webhook_attempt(delivery_id=delivery.pk)
    finally:
        peer.stop.set()
    took = time.monotonic() - started
    delivery.refresh_from_db()
    assert took < 4, took
    assert words in delivery.last_error, delivery.last_error
    # A network failure is worth another try later: pending with its next attempt's time, never silently stuck.
    assert delivery.state == "pending" and delivery.attempts == 1 and delivery.next_attempt_at is not None


# --- what the log publishes; nothing pending unseen; the caller's work stands --------------------------------


@pytest.mark.django_db
def test_the_audit_entry_of_a_finished_delivery_publishes_no_status_attempts_or_address(
    receiver: Receiver, settings: Any
) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    open_port = _deliver(receiver.url())
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    settings.BENCHREG_WEBHOOK_MAX_ATTEMPTS = 1
    closed_port = _deliver(f"http://127.0.0.1:{port}/hook")
    assert open_port.state == "delivered" and closed_port.state == "failed"
    entries = {e.subject: json.loads(e.entry) for e in AuditEntry.objects.filter(kind="webhook.finished")}
    published = [entries[open_port.message_id], entries[closed_port.message_id]]
    assert published[0]["payload"] == published[1]["payload"]  # open and closed ports read alike
    for text in published:
        assert not {"status", "attempts", "url", "state", "error"} & set(text["payload"])
        assert str(receiver.port) not in json.dumps(text) and str(port) not in json.dumps(text)


@pytest.mark.django_db
def test_no_secret_fails_the_delivery_at_once_instead_of_leaving_it_pending(receiver: Receiver, settings: Any) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    delivery = _deliver(receiver.url(), secret="")
    assert delivery.state == "failed" and "no usable secret" in delivery.last_error and receiver.received == []


@pytest.mark.django_db
def test_a_failing_receiver_never_breaks_the_callers_work_and_the_sweep_finishes_it(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Without a broker the delivery runs in-process after the caller's commit: a 500 leaves it pending (no
    backoff sleeps in the caller), the sweep queues it again when due, and gives up after the limit, logged."""
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    failing = Receiver(status=500)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            delivery = webhook_enqueue(url=failing.url(), secret=webhook_secret_new(), event="e", body={})
        delivery.refresh_from_db()
        assert delivery.state == "pending" and delivery.attempts == 1 and len(failing.received) == 1
        # The sweep queues it again once overdue (here: made overdue), and not again before it is due.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(hours=1))
        assert webhooks_sweep() == {"failed": 0, "queued": 1}
        delivery.refresh_from_db()
        assert delivery.attempts == 2 and len(failing.received) == 2 and delivery.state == "pending"
        assert webhooks_sweep() == {"failed": 0, "queued": 0}
        # Past the limit it is given up, recorded and logged: never pending unseen.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            created_at=timezone.now() - timedelta(seconds=settings.BENCHREG_WEBHOOK_GIVE_UP_AFTER_S + 1),
            next_attempt_at=timezone.now() - timedelta(seconds=1),
        )
        assert webhooks_sweep()["failed"] == 1
        delivery.refresh_from_db()
        assert delivery.state == "failed" and "not delivered within" in delivery.last_error
        assert delivery.finished_at is not None and len(failing.received) == 2
    finally:
        failing.close()


@pytest.mark.django_db
def test_a_delivery_that_no_broker_could_take_is_queued_again_by_the_sweep(receiver: Receiver, settings: Any) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    delivery = webhook_enqueue(url=receiver.url(), secret=webhook_secret_new(), event="e", body={})  # never sent
    assert webhooks_sweep() == {"failed": 0, "queued": 0}  # not yet overdue: its message may still be queued
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    assert webhooks_sweep() == {"failed": 0, "queued": 1}
    delivery.refresh_from_db()
    assert delivery.state == "delivered" and len(receiver.received) == 1


def test_deliveries_have_their_own_queue(settings: Any) -> None:
    route = app.amqp.router.route({}, "registry.tasks.webhooks.deliver_webhook")
    assert route["queue"].name == settings.BENCHREG_WEBHOOK_QUEUE == "webhooks"
    assert app.amqp.router.route({}, "registry.tasks.reports.reports_sweep")["queue"].name == "celery"
    assert {q.name for q in settings.CELERY_TASK_QUEUES} == {"celery", "webhooks"}  # a worker without -Q: both


@pytest.mark.django_db
def test_benchreg_sweep_runs_the_webhooks_sweep_too(receiver: Receiver, settings: Any) -> None:
    """The embedded default without beat: `benchreg sweep` (by hand or from cron) delivers what was left pending."""
    from io import StringIO

    from django.core.management import call_command

    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    delivery = webhook_enqueue(url=receiver.url(), secret=webhook_secret_new(), event="e", body={})
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    out = StringIO()
    call_command("sweep", stdout=out)
    assert "webhooks: 0 failed for good, 1 queued again" in out.getvalue()
    delivery.refresh_from_db()
    assert delivery.state == "delivered" and len(receiver.received) == 1
