"""The one path in: every run, whatever brought it, is validated, canonicalised and stored here."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

import protocol
from protocol import summary
from protocol.errors import pointer
from registry.choices import AuditKind, Trust
from registry.exceptions import RegistryError
from registry.models import ApiToken, Submission, Withdrawal
from registry.services.audit import audit_append
from registry.services.jobs import job_submission_create
from registry.services.reactions import run_withdrawn
from registry.services.runs import run_store, runs_store


class InvalidDocument(RegistryError):
    """The document failed the protocol's checks; `errors` lists every problem with its pointer."""

    status = 400
    code = "invalid-document"


class SameMeasurement(RegistryError):
    """A stored run already states this measurement (identical source files) in a different document that this
    one may not replace (docs/comparability.md, "One measurement, counted once")."""

    status = 409
    code = "same-measurement"


def submission_create(
    *,
    document: bytes | str | dict[str, Any],
    submitted_by: User,
    token: ApiToken | None = None,
    trust: str = Trust.DECLARED,
) -> tuple[Submission, bool]:
    """Validate, canonicalise and store one run. Returns (run, created).

    `trust` is the caller's path in (Trust: declared for a token holder, imported for an importer, example for
    the example loaders); an agent's run for its job is always "vouched", whatever is passed. A document already
    stored (same digest) is returned as it is, with the level it was first stored with; so is the run of a
    document that states the same measurement from the same source files read in another folder (`_sameness`). A
    rejected document raises InvalidDocument (or SameMeasurement) and stores nothing.
    """
    _require_trust(trust)
    return _create_checked(submission_check(document), submitted_by, token, trust)


def _create_checked(
    checked: protocol.Checked, submitted_by: User, token: ApiToken | None, trust: str
) -> tuple[Submission, bool]:
    """`submission_create` of a document that passed the checks."""
    if _for_a_job(checked):
        # An agent's run for its job: stored and linked to the job in one locked step (one run per job).
        return job_submission_create(checked=checked, submitted_by=submitted_by, token=token)
    existing = _stored_with_digest(checked.digest)
    if existing is not None:
        return existing, False
    same = _sameness([checked], submitted_by, trust)[0]
    if isinstance(same, Submission):
        return same, False
    if isinstance(same, SameMeasurement):
        raise same
    try:
        with transaction.atomic():
            run = run_store(checked=checked, submitted_by=submitted_by, token=token, trust=trust)
            _supersede(run, same, submitted_by)
            return run, True
    except IntegrityError:
        # Another request stored the same document between our lookup and insert: same run.
        existing = Submission.objects.filter(digest=checked.digest).first()
        if existing is None:
            raise
        return existing, False


def _stored_with_digest(digest: str) -> Submission | None:
    """The run stored with this digest, or None. Every submission asks first and nearly every answer is None: the
    question is one indexed SQL lookup of the id (the ORM's compiling of `filter(digest=…).first()`, 40 columns
    ordered by id, cost 1 ms of a submission's ~7 ms of CPU, issue 42); the run is read only when there is one."""
    with transaction.get_connection().cursor() as cursor:
        cursor.execute(_DIGEST_LOOKUP_SQL, [digest])
        row = cursor.fetchone()
    return None if row is None else Submission.objects.get(pk=row[0])


_DIGEST_LOOKUP_SQL = f"SELECT id FROM {Submission._meta.db_table} WHERE digest = %s"  # noqa: S608 (the model's table)


def _require_trust(trust: str) -> None:
    if trust not in Trust.values or trust == Trust.VOUCHED:
        raise ValueError(
            f"trust {trust!r}: only an agent's job run is vouched; give one of declared, imported, example"
        )


def submission_check(document: bytes | str | dict[str, Any]) -> protocol.Checked:
    """The protocol's checks every stored run passes, and that its columns fit this registry's (`_unstorable`), or
    InvalidDocument with every problem and its pointer."""
    try:
        checked = protocol.check(document)
    except protocol.Invalid as exc:
        raise InvalidDocument(
            f"the document has {len(exc.errors)} problem(s)", errors=[e.as_dict() for e in exc.errors]
        ) from None
    problems = _unstorable(checked)
    if problems:
        raise InvalidDocument(f"the document has {len(problems)} problem(s)", errors=problems)
    return checked


def _for_a_job(checked: protocol.Checked) -> bool:
    provenance = checked.document["provenance"]
    return provenance.get("job") is not None or provenance.get("agent") is not None


# Where each of a run's summary columns is read from in its document, and its limits: protocol.summary.COLUMNS (a
# value the schema allows but the column cannot hold is refused at the field the submitter wrote; the schema is the
# protocol's, wider than some columns). A column read from several fields is refused at the document's root.


def _column_source(column: str, document: dict[str, Any]) -> tuple[str, str]:
    """(pointer, name as the message says it) of the document field `column` is read from."""
    accelerators = document["system"]["accelerators"]
    if column == "accelerator_count" and len(accelerators) > 1:
        return "/system/accelerators", "the sum of system.accelerators[*].count"
    if column == "accelerator_model" and not accelerators:
        where = "/system/host/cpu_model"
    elif column == "headline_unit":
        where = pointer(("metrics", document["metrics"]["primary"].partition(".")[0], "unit"))
    else:
        where = summary.BY_NAME[column].pointer
    name = ".".join(f"[{p}]" if p.isdigit() else p for p in where.split("/")[1:]).replace(".[", "[")
    return where, name or "the document"


def _unstorable(checked: protocol.Checked) -> list[dict[str, str]]:
    """Each summary column whose value is beyond its declared limits (protocol.summary.COLUMNS, which the model's
    fields equal), as an error at the field it comes from. The comparability keys are digests of a fixed width."""
    errors = []
    for column, value in checked.summary.columns().items():
        limits = summary.BY_NAME[column].limits
        beyond = None if value is None or limits is None else _beyond(value, limits)
        if beyond is None:
            continue
        code, what, bound = beyond
        where, name = _column_source(column, checked.document)
        errors.append(
            {
                "pointer": where,
                "code": code,
                "message": f"{what} is beyond what this registry stores for {name} ({bound})",
            }
        )
    return errors


def _beyond(value: Any, limits: tuple[int, int] | int) -> tuple[str, str, str] | None:
    """(code, what, bound) when `value` is beyond its column's limits (an integer range or a maximum length)."""
    # An integer literal from 2^53 on parses as the double it is canonically (protocol.parsing), so a float.
    if isinstance(limits, tuple) and isinstance(value, int | float) and not limits[0] <= value <= limits[1]:
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        return (
            "integer-out-of-range",
            str(shown),
            (f"at most {limits[1]}" if value > limits[1] else f"at least {limits[0]}"),
        )
    if isinstance(limits, int) and isinstance(value, str) and len(value) > limits:
        return "too-long", f"{len(value)} characters", f"at most {limits}"
    return None


@transaction.atomic
def submission_withdraw(*, submission: Submission, reason: str, actor: User) -> Withdrawal:
    """Withdraw a run: a new, logged record with the reason. The run stays, marked withdrawn."""
    if not reason.strip():
        raise RegistryError("a withdrawal needs a reason", code="reason-required")
    # Concurrent withdrawals of one run queue on its row, so each after the first sees the stored withdrawal and
    # answers 409 instead of meeting the unique constraint. NO KEY UPDATE: writers that only reference the run
    # (a comparison, a decision citing it) are not held up.
    Submission.objects.select_for_update(no_key=True).filter(pk=submission.pk).exists()
    if Withdrawal.objects.filter(submission=submission).exists():
        raise RegistryError(f"run {submission.pk} is already withdrawn", status=409, code="already-withdrawn")
    withdrawal = Withdrawal.objects.create(
        submission=submission,
        reason=reason.strip(),
        withdrawn_by=actor,
        withdrawn_by_name=actor.get_username(),
        withdrawn_at=timezone.now(),
    )
    _audit_withdrawn(withdrawal, submission, actor)
    run_withdrawn(withdrawal=withdrawal)
    return withdrawal


def _audit_withdrawn(withdrawal: Withdrawal, submission: Submission, actor: User) -> None:
    audit_append(
        kind=AuditKind.RUN_WITHDRAWN,
        actor=actor.get_username(),
        actor_user=actor.pk,
        subject=submission.digest,
        time=withdrawal.withdrawn_at,
        payload={"run": submission.pk, "reason": withdrawal.reason},
    )


# --- one measurement, one piece of evidence -------------------------------------------------------------------------
# A document whose measurement identity (protocol.measurement_identity: its source files' contents, round,
# benchmark, scenario, derivation) is already stated by a stored run that is not withdrawn, in another document:
#   * the same document once the files' paths are set aside (the same files read from another folder): "known",
#     that run is returned and nothing is stored;
#   * a different document (a newer importer's corrected reading of the same files) from the same path in (an
#     import replacing an import, or the same submitter at the same trust level): stored, and the older runs are
#     withdrawn, naming the new run, so the measurement is counted once and the old document stays on record;
#   * otherwise refused (SameMeasurement): a token holder's document cannot push an imported run aside.


def _identity(checked: protocol.Checked) -> str:
    return protocol.measurement_identity(checked.document, own_digest=checked.digest)


def _sameness(
    checked: list[protocol.Checked], submitted_by: User, trust: str
) -> list[Submission | list[Submission] | SameMeasurement]:
    """For each new document: the run it restates (known), the runs it replaces ([] for none), or its refusal.
    One query, and none when no document names source files (its identity is then its own digest)."""
    identities = [_identity(one) for one in checked]
    wanted = {i for i, one in zip(identities, checked, strict=True) if i != one.digest}
    stored: dict[str, list[Submission]] = {}
    if wanted:
        runs = Submission.objects.filter(measurement__in=wanted, withdrawal__isnull=True).order_by("-id")
        for run in runs.exclude(digest__in={one.digest for one in checked}):
            stored.setdefault(run.measurement, []).append(run)
    return [
        _decide(one, stored.get(identity, []), submitted_by, trust)
        for one, identity in zip(checked, identities, strict=True)
    ]


def _decide(
    checked: protocol.Checked, stored: list[Submission], submitted_by: User, trust: str
) -> Submission | list[Submission] | SameMeasurement:
    for run in stored:
        if protocol.same_but_for_file_locations(checked.document, run.document):
            return run
    if all(
        run.trust == trust and (trust == Trust.IMPORTED or run.submitted_by_id == submitted_by.pk) for run in stored
    ):
        return stored
    first = stored[0]
    message = (
        f"run {first.pk} already states this measurement (identical source files) in a different document, "
        f"stored as {first.trust}: withdraw run {first.pk} first to replace it"
    )
    return SameMeasurement(
        f"same measurement as run {first.pk}",
        errors=[{"pointer": "/provenance/origin/files", "code": SameMeasurement.code, "message": message}],
    )


def _supersede(run: Submission, replaced: list[Submission], submitted_by: User) -> None:
    """`run` was stored in place of `replaced` (runs of its measurement): each is withdrawn, naming it."""
    for old in replaced:
        submission_withdraw(
            submission=old,
            reason=(
                f"superseded by run {run.pk}, a newer document of the same measurement (identical source files); "
                "this run stays on record"
            ),
            actor=submitted_by,
        )


def same_measurement_note(run: Submission, replaced: list[Submission] | None = None) -> str:
    """How an import report or an API answer says what a document was to a stored measurement."""
    if replaced:
        ids = ", ".join(f"run {old.pk}" for old in replaced)
        return f"replaces {ids}: same measurement (identical source files), a newer document; withdrawn, kept on record"
    return f"same measurement as run {run.pk} (identical source files, read from another folder): nothing stored"


# --- many documents in one call (the bulk API and the MLPerf import) ---------------------------------------------

BATCH_TRANSACTION = 200  # documents stored per transaction in a batch


@dataclass
class BatchOutcome:
    """What became of one document of a batch: stored, known (already stored) or refused (with the error)."""

    status: str
    run: Submission | None = None
    error: RegistryError | None = None
    note: str = ""  # what the document was to a stored run of the same measurement (same_measurement_note)


def submission_create_batch(
    *,
    documents: Iterable[bytes | str | dict[str, Any] | RegistryError],
    submitted_by: User,
    token: ApiToken | None = None,
    trust: str = Trust.DECLARED,
    on_outcome: Callable[[int, BatchOutcome], None] | None = None,
    per_transaction: int = BATCH_TRANSACTION,
) -> list[BatchOutcome]:
    """Validate and store each document like `submission_create`; each stands or falls alone.

    A document may already be a RegistryError (a line the caller could not parse): it is refused as it is.
    Documents are checked one by one (a refused one stores nothing), then the new ones of every
    `per_transaction` are stored together (`runs_store`: one COPY or INSERT of the runs, one INSERT of their audit
    entries, one upsert of their catalogue cells), so a batch costs a few statements per chunk instead of ~10 per
    document.
    A document already stored, or twice in the batch, is "known". If another writer stores one of the chunk's
    documents meanwhile, or PostgreSQL ends a deadlock with another batch holding some of the same documents in
    another order by rolling this chunk back, the chunk is stored one document at a time instead (same
    outcomes). An agent's run for its job takes the single path (it is linked to its job under a lock).
    `on_outcome(index, outcome)` is called in order as each document is decided (progress, streaming).
    """
    _require_trust(trust)
    outcomes: list[BatchOutcome] = []
    pending = iter(documents)
    while True:
        chunk = list(itertools.islice(pending, per_transaction))
        if not chunk:
            return outcomes
        for outcome in _batch_chunk(chunk, submitted_by, token, trust):
            if on_outcome is not None:
                on_outcome(len(outcomes), outcome)
            outcomes.append(outcome)


def _batch_chunk(
    chunk: list[bytes | str | dict[str, Any] | RegistryError],
    submitted_by: User,
    token: ApiToken | None,
    trust: str,
) -> list[BatchOutcome]:
    decided: list[BatchOutcome | None] = [None] * len(chunk)
    checked: dict[int, protocol.Checked] = {}
    for i, document in enumerate(chunk):
        one = _check_one(document, submitted_by, token, trust)
        if isinstance(one, BatchOutcome):
            decided[i] = one
        else:
            checked[i] = one
    if checked:
        runs = _store_chunk(checked, submitted_by, token, trust)
        for i, one in checked.items():
            decided[i] = _batch_one(one, submitted_by, token, trust) if runs is None else runs[i]
    return [outcome for outcome in decided if outcome is not None]


def _check_one(
    document: bytes | str | dict[str, Any] | RegistryError, submitted_by: User, token: ApiToken | None, trust: str
) -> BatchOutcome | protocol.Checked:
    """A document of a batch checked: refused, an agent's job run stored alone, or checked for the chunk."""
    if isinstance(document, RegistryError):
        return BatchOutcome("refused", error=document)
    try:
        one = submission_check(document)
    except InvalidDocument as exc:
        return BatchOutcome("refused", error=exc)
    return _batch_one(one, submitted_by, token, trust) if _for_a_job(one) else one


def _store_chunk(
    checked: dict[int, protocol.Checked], submitted_by: User, token: ApiToken | None, trust: str
) -> dict[int, BatchOutcome] | None:
    """The chunk's documents stored together; None when they must be stored one at a time instead."""
    try:
        with transaction.atomic():
            return _store_new(checked, submitted_by, token, trust)
    except IntegrityError:  # another writer stored one of these meanwhile: one at a time, each alone
        return None
    except OperationalError as exc:
        if not _deadlocked(exc):
            raise
        return None  # another batch was storing some of these documents in another order: the same way


def _deadlocked(exc: OperationalError) -> bool:
    """PostgreSQL chose this transaction to end a deadlock (SQLSTATE 40P01); it has been rolled back."""
    return getattr(exc.__cause__, "sqlstate", None) == "40P01"


def _store_new(
    checked: dict[int, protocol.Checked], submitted_by: User, token: ApiToken | None, trust: str
) -> dict[int, BatchOutcome]:
    """Store the documents not stored yet (one SELECT for the known ones, one for runs of the same measurements:
    `_sameness`), then withdraw the runs they replace; index -> outcome."""
    known = {run.digest: run for run in Submission.objects.filter(digest__in={c.digest for c in checked.values()})}
    new: dict[str, protocol.Checked] = {}
    for one in checked.values():
        if one.digest not in known:
            new.setdefault(one.digest, one)
    decided = dict(zip(new, _sameness(list(new.values()), submitted_by, trust), strict=True))
    firsts = _first_of_each_measurement(new, decided)
    storing = [one for digest, one in new.items() if isinstance(decided[digest], list) and firsts[digest] is one]
    stored = {
        run.digest: run for run in runs_store(checked=storing, submitted_by=submitted_by, token=token, trust=trust)
    }
    for digest, run in stored.items():
        _supersede(run, cast(list[Submission], decided[digest]), submitted_by)
    out: dict[int, BatchOutcome] = {}
    for i, one in checked.items():
        if one.digest in known:
            out[i] = BatchOutcome("known", run=known[one.digest])
        else:
            out[i] = _new_outcome(one, new[one.digest], decided[one.digest], firsts[one.digest], stored)
    return out


def _first_of_each_measurement(
    new: dict[str, protocol.Checked], decided: dict[str, Submission | list[Submission] | SameMeasurement]
) -> dict[str, protocol.Checked]:
    """digest -> the batch's first new document of its measurement (a later one restates it, or is refused)."""
    first: dict[str, protocol.Checked] = {}
    for digest, one in new.items():
        if isinstance(decided[digest], list):
            first.setdefault(_identity(one), one)
    return {digest: first.get(_identity(one), one) for digest, one in new.items()}


def _new_outcome(
    one: protocol.Checked,
    stored_copy: protocol.Checked,
    decision: Submission | list[Submission] | SameMeasurement,
    first: protocol.Checked,
    stored: dict[str, Submission],
) -> BatchOutcome:
    """What became of a document not stored before this batch."""
    if isinstance(decision, SameMeasurement):
        return BatchOutcome("refused", error=decision)
    if isinstance(decision, Submission):
        return BatchOutcome("known", run=decision, note=same_measurement_note(decision))
    run = stored[first.digest]
    if first is not stored_copy:  # a second document of one measurement in the batch
        if protocol.same_but_for_file_locations(one.document, run.document):
            return BatchOutcome("known", run=run, note=same_measurement_note(run))
        return BatchOutcome("refused", error=_twice_in_batch(run))
    # a second copy of one document in the batch is "known"
    created = stored_copy is one
    note = same_measurement_note(run, decision) if decision else ""
    return BatchOutcome("stored" if created else "known", run=run, note=note)


def _twice_in_batch(run: Submission) -> SameMeasurement:
    message = f"this batch states the measurement of run {run.pk} twice, in different documents: send one"
    return SameMeasurement(
        f"same measurement as run {run.pk}",
        errors=[{"pointer": "/provenance/origin/files", "code": SameMeasurement.code, "message": message}],
    )


def _batch_one(checked: protocol.Checked, submitted_by: User, token: ApiToken | None, trust: str) -> BatchOutcome:
    """One checked document of a batch stored alone (an agent's job run, or a chunk that lost a race)."""
    try:
        with transaction.atomic():  # a savepoint: a refused document leaves the rest of the batch intact
            run, created = _create_checked(checked, submitted_by, token, trust)
    except RegistryError as exc:
        return BatchOutcome("refused", error=exc)
    note = same_measurement_note(run) if run.digest != checked.digest else ""
    return BatchOutcome("stored" if created else "known", run=run, note=note)
