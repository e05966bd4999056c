"""Submitted runs: the evidence itself, stored exactly as canonicalised, with indexed summary columns."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, cast

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef, Q

from registry.choices import Trust

from .fields import BulkJSONField, BulkTextField, loads_stored
from .immutable import AppendOnlyModel, AppendOnlyQuerySet


class SubmissionQuerySet(AppendOnlyQuerySet):
    """Runs, with the one rule for what counts as independent evidence (`independent`)."""

    def independent(self) -> SubmissionQuerySet:
        """The runs that count as independent evidence: measured (not derived from another run), and the newest
        document of their measurement among runs not withdrawn (`superseded` is the rest). Withdrawn runs are not
        excluded here: callers choose whether to show them, as everywhere else.

        Whatever counts or pools runs (comparisons, decisions, series, the catalogue's cells and the matrix) asks
        this, or `registry.services.catalogue`'s `counted_ids` (the same rule over runs in memory)."""
        return self.not_superseded().filter(derived=False)

    def not_superseded(self) -> SubmissionQuerySet:
        """The runs that are the newest document of their measurement among runs not withdrawn (derived ones
        included: decisions give them to protocol.decisions, which leaves them out with the reason)."""
        return self.exclude(Exists(superseding(OuterRef("measurement"), OuterRef("pk"))))


def superseding(measurement: Any, pk: Any) -> models.QuerySet[Submission]:
    """Runs not withdrawn that state `measurement` in a newer document than run `pk` (OuterRefs or values). A run
    with no identity ("": a row written around the run store) shares its measurement with no other."""
    return Submission.objects.filter(measurement=measurement, pk__gt=pk, withdrawal__isnull=True).exclude(
        measurement=""
    )


class Submission(AppendOnlyModel):
    """One benchmark run. Immutable: the canonical text hashes to `digest`; columns are read from it.

    The summary columns (protocol_version … sweep_id) are protocol.summary.COLUMNS, declared there once: a test
    holds these fields equal to it (name, type, width, null).

    `document` (JSONB on PostgreSQL) serves queries; `canonical` is the exact RFC 8785 text, so the document
    can be returned byte for byte and re-hashed by anyone.
    """

    digest = models.CharField(max_length=71, unique=True)
    # What the run measured, whatever folder its source files lay in (protocol.measurement_identity): runs of one
    # measurement are one piece of evidence, counted once (`SubmissionQuerySet.independent`).
    measurement = models.CharField(max_length=71, db_index=True, default="")
    # Derived from another run by the publisher's rule, not measured (protocol.is_derived): never independent.
    derived = models.BooleanField(default=False)
    document = BulkJSONField()  # a plain JSONField (and TextField) that bulk-inserts faster: see fields.py
    canonical = BulkTextField()
    # Digest of the controlled fields per axis (protocol.comparability): "comparable with X" is one index
    # lookup. The default axis (system) is `comparability_key`.
    comparability_key = models.CharField(max_length=71, db_index=True)
    comparability_key_software = models.CharField(max_length=71, db_index=True, default="")
    comparability_key_precision = models.CharField(max_length=71, db_index=True, default="")
    comparability_key_iso_quality = models.CharField(max_length=71, db_index=True, default="")
    comparability_key_scaling = models.CharField(max_length=71, db_index=True, default="")

    protocol_version = models.CharField(max_length=20)
    phase = models.CharField(max_length=20)
    workload_name = models.CharField(max_length=200)
    workload_version = models.CharField(max_length=100)
    scenario_kind = models.CharField(max_length=40)
    precision_weights = models.CharField(max_length=20)
    precision_activations = models.CharField(max_length=20)
    batch_size = models.PositiveIntegerField()
    system_name = models.CharField(max_length=200)
    accelerator_vendor = models.CharField(max_length=200)
    accelerator_model = models.CharField(max_length=500)
    accelerator_count = models.PositiveIntegerField()
    submitter = models.CharField(max_length=200, help_text="provenance.submitter as the document states it")
    source = models.CharField(max_length=20)
    started_at = models.DateTimeField(null=True)
    headline_metric = models.CharField(max_length=60)
    headline_value = models.FloatField(null=True)
    headline_unit = models.CharField(max_length=20, null=True)  # noqa: DJ001 (null = the document gave none)
    headline_lower_is_better = models.BooleanField()
    # The frameworks map as one string ("torch 2.13.0"), read from the document like the columns above: the
    # catalogue's software facet groups and filters on it instead of reading every document's JSON.
    software_summary = models.CharField(max_length=500, default="", db_index=True)
    # Where a published result comes from (provenance.origin): filterable so that, e.g., a preview system is
    # never compared with an available one unknowingly. "" when the document does not say (own lab runs).
    origin_round = models.CharField(max_length=100, default="", db_index=True)
    origin_division = models.CharField(max_length=100, default="", db_index=True)
    origin_category = models.CharField(max_length=100, default="", db_index=True)
    origin_availability = models.CharField(max_length=100, default="", db_index=True)
    # provenance.origin.kind ("mlperf-inference", "serving-benchmark"; "" when not stated).
    origin_kind = models.CharField(max_length=40, default="")
    # Figures per accelerator (protocol.per_accelerator), derived from the document like the columns above so that
    # lists sort on them: the throughput in its unit, output tokens/s and input+output tokens/s (InferenceMAX's
    # tokens/s per GPU). Null when the run cannot give the figure (no accelerator count, no such rate). PostgreSQL
    # has (value DESC NULLS LAST, id DESC) indexes on each, made by migration 0025 only there.
    per_accelerator_throughput = models.FloatField(null=True)
    per_accelerator_unit = models.CharField(max_length=20, default="")
    per_accelerator_output_tokens = models.FloatField(null=True)
    per_accelerator_total_tokens = models.FloatField(null=True)
    # The serving sweep the run is a level of (scenario.sweep.id; "" for any other run): sweep pages select on it.
    sweep_id = models.CharField(max_length=100, default="")

    # Set by the path the run came in (agent job, token holder, import, example loader), never by the document:
    # a document can claim `provenance.source: "runner"`; only the registry knows who vouches for it.
    trust = models.CharField(max_length=10, choices=Trust.choices, default=Trust.DECLARED, db_index=True)

    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    submitted_by_name = models.CharField(max_length=150, help_text="username snapshotted at submission")
    token = models.ForeignKey("registry.ApiToken", null=True, on_delete=models.PROTECT, related_name="submissions")
    submitted_at = models.DateTimeField(db_index=True)

    objects = SubmissionQuerySet.as_manager()  # type: ignore[misc]  # the base declares the plain append-only one

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["phase", "workload_name"]),
            models.Index(fields=["scenario_kind"]),
            models.Index(fields=["precision_weights"]),
            models.Index(fields=["batch_size"]),
            models.Index(fields=["accelerator_model"]),
            models.Index(fields=["accelerator_vendor"]),
            models.Index(fields=["submitter"]),
            models.Index(fields=["submitted_by_name"]),
            models.Index(fields=["system_name"]),
            # Partial: most runs are no sweep's level. (sweep_id, id) gives a sweep's levels in order; (id) over
            # levels only gives the newest sweeps without reading the other runs.
            models.Index(fields=["sweep_id", "id"], condition=~Q(sweep_id=""), name="registry_sub_sweep_levels"),
            models.Index(fields=["-id"], condition=~Q(sweep_id=""), name="registry_sub_sweep_newest"),
            # PostgreSQL also has trigram indexes for the catalogue's search and (headline_value, id) indexes in
            # both sort orders: vendor-specific, so created by migration 0007 only there (not model state).
        ]

    # The column holding the comparability key of each axis.
    KEY_COLUMNS = {
        "system": "comparability_key",
        "software": "comparability_key_software",
        "precision": "comparability_key_precision",
        "iso-quality": "comparability_key_iso_quality",
        "scaling": "comparability_key_scaling",
    }

    @classmethod
    def from_db(  # type: ignore[override]  # Django 5.2's signature: django-stubs add 6.0's fetch_mode
        cls, db: str | None, field_names: Collection[str], values: Collection[Any]
    ) -> Submission:
        """Loaded runs carry the canonical text's parse as `document`, whenever both were loaded.

        PostgreSQL's JSONB keeps numbers as exact decimals: 1e308 comes back as a 309-digit integer and -0.0 as
        0. The canonical text is the evidence and the JSONB column only serves queries, so everything computed
        from a run (comparisons, reports, pages) reads the numbers the submitter sent, on every database.
        """
        run = super().from_db(db, field_names, values)
        if "canonical" in run.__dict__ and "document" in run.__dict__:
            run.document = loads_stored(run.canonical)
        return run

    def key_for(self, axis: str) -> str:
        return cast(str, getattr(self, self.KEY_COLUMNS[axis]))  # every key column is a CharField

    def __str__(self) -> str:
        return f"run {self.pk} {self.workload_name} {self.scenario_kind} {self.precision_weights} on {self.system_name}"


class Withdrawal(AppendOnlyModel):
    """A run taken out of consideration, with the reason. The run itself is never deleted."""

    submission = models.OneToOneField(Submission, on_delete=models.PROTECT, related_name="withdrawal")
    reason = models.TextField()
    withdrawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    withdrawn_by_name = models.CharField(max_length=150)
    withdrawn_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"withdrawal of run {self.submission_id}"
