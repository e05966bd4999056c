"""Admin: evidence is read-only here too; tokens can be revoked but never edited or deleted.

Who may use it is registry.policy's decision (ADMIN_SITE: admins by role, superusers and staff), not Django's
per-model permissions, so the admin agrees with the pages, the API and the CLI.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.text import get_valid_filename

from registry import policy
from registry.importers.archives import ArchiveError, unpack
from registry.importers.mlperf.published import PublishedTableError
from registry.models import Agent, ApiToken, AuditEntry, EnrolmentToken, Job, Plan, Submission, Withdrawal
from registry.services.agents import agent_revoke, enrolment_token_create
from registry.services.imports import mlperf_import
from registry.services.jobs import JobConflict, job_cancel
from registry.services.tokens import token_revoke
from registry.storage import uploads_storage


class MlperfUploadForm(forms.Form):
    archive = forms.FileField(
        label="Submission tree (.zip, .tar, .tar.gz)",
        help_text="the folder that holds systems/ and results/, or one above it",
    )
    round = forms.CharField(
        label="MLPerf round (optional)",
        required=False,
        max_length=20,
        help_text="e.g. v5.1; by default it is read from the LoadGen logs",
    )


def _admin_may(request: HttpRequest, action: str = policy.ADMIN_SITE) -> bool:
    return policy.can(policy.for_user(request.user), action)


if TYPE_CHECKING:  # ModelAdmin cannot be subscripted at run time; the stubs' is generic
    _ModelAdmin = admin.ModelAdmin[Any]
else:
    _ModelAdmin = admin.ModelAdmin


class PolicyAdmin(_ModelAdmin):
    """Viewing follows the policy; each admin below narrows adding, changing and deleting further."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _admin_may(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _admin_may(request)


class ReadOnlyAdmin(PolicyAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "workload_name",
        "scenario_kind",
        "precision_weights",
        "batch_size",
        "system_name",
        "headline_value",
        "headline_unit",
        "submitted_by_name",
        "submitted_at",
    ]
    list_filter = ["phase", "scenario_kind", "precision_weights", "accelerator_vendor"]
    search_fields = ["digest", "workload_name", "system_name", "submitter"]
    exclude = ["document"]
    change_list_template = "admin/registry/submission/change_list.html"

    def get_urls(self) -> list[Any]:
        custom = [
            path(
                "import-mlperf/",
                self.admin_site.admin_view(self.import_mlperf_view),
                name="registry_submission_import_mlperf",
            )
        ]
        return custom + super().get_urls()

    def import_mlperf_view(self, request: HttpRequest) -> HttpResponse:
        """Upload an MLPerf Inference submission tree (zip/tar) and import it like `benchreg import mlperf`."""
        if not _admin_may(request):
            raise Http404
        form = MlperfUploadForm(request.POST or None, request.FILES or None)
        result = error = None
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["archive"]
            with tempfile.TemporaryDirectory(prefix="benchreg-import-") as tmp:
                try:  # bounded while unpacking: a refused archive leaves nothing but this temporary folder
                    root = unpack(
                        upload,
                        upload.name,
                        Path(tmp),
                        max_bytes=settings.BENCHREG_IMPORT_MAX_UNPACKED_BYTES,
                        max_members=settings.BENCHREG_IMPORT_MAX_MEMBERS,
                    )
                except ArchiveError as exc:
                    error = str(exc)
                else:
                    try:
                        result = mlperf_import(
                            root=root,
                            submitted_by=cast(User, request.user),  # the admin site serves signed-in users
                            round_name=form.cleaned_data["round"] or None,
                        )
                    except PublishedTableError as exc:  # the archive's summary_results.json: nothing stored
                        error = f"the published table cannot referee this import: {exc}; nothing was stored"
            if result is not None and result.counts.get("stored"):  # the archive is the stored runs' provenance
                keep_error = _keep_upload(upload)
                if keep_error:
                    messages.warning(request, keep_error)
        context = {
            **self.admin_site.each_context(request),
            "title": "Import MLPerf results",
            "form": form,
            "result": result,
            "error": error,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/registry/submission/import_mlperf.html", context)


def _keep_upload(upload: Any) -> str | None:
    """Keep an imported archive (uploads storage: the data dir, or S3-compatible storage) as the import's
    provenance. Only an archive that unpacked cleanly is kept; the import is committed by then, so a storage
    failure is reported, not raised."""
    try:
        name = get_valid_filename(Path(upload.name).name)
    except SuspiciousFileOperation:  # nothing usable is left of the name
        name = "upload"
    upload.seek(0)
    try:
        uploads_storage().save(f"mlperf/{timezone.now():%Y%m%dT%H%M%S}-{name}", upload)
    except Exception as exc:  # the storage backend's own errors (disk, S3) vary: none may undo the import
        return f"the import is stored, but the archive could not be kept: {type(exc).__name__}: {exc}"
    return None


@admin.register(Withdrawal)
class WithdrawalAdmin(ReadOnlyAdmin):
    list_display = ["submission", "reason", "withdrawn_by_name", "withdrawn_at"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["seq", "kind", "actor", "subject", "created_at"]
    list_filter = ["kind"]


@admin.register(ApiToken)
class ApiTokenAdmin(PolicyAdmin):
    list_display = ["prefix", "name", "user", "scopes", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = [
        "user",
        "name",
        "prefix",
        "key_hash",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are created with `benchreg create-token` or the API, which show the token once

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        if not _admin_may(request):
            return
        for token in queryset:
            token_revoke(token=token, actor=request.user.get_username())


@admin.register(EnrolmentToken)
class EnrolmentTokenAdmin(PolicyAdmin):
    """Add one to get a single-use token, shown once in the message bar; rows are never edited."""

    list_display = ["prefix", "note", "created_by_name", "created_at", "expires_at", "used_at"]
    fields = ["note", "expires_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return _admin_may(request, policy.ENROLMENT_MANAGE)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and _admin_may(request, policy.ENROLMENT_MANAGE)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        row, plain = enrolment_token_create(
            created_by=cast(User, request.user),  # the admin site serves signed-in users
            note=obj.note,
            expires_in=obj.expires_at - timezone.now(),
        )
        obj.pk, obj.prefix, obj.key_hash = row.pk, row.prefix, row.key_hash
        obj._state.adding = False
        self.message_user(request, f"Enrolment token (shown once, single use): {plain}", messages.WARNING)


@admin.register(Agent)
class AgentAdmin(PolicyAdmin):
    list_display = ["name", "queue", "is_online", "last_heartbeat_at", "enrolled_at", "revoked_at"]
    readonly_fields = [
        "name",
        "queue",
        "user",
        "token",
        "enrolment",
        "embedded",
        "inventory",
        "enrolled_at",
        "last_heartbeat_at",
        "online",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # machines enrol themselves with an enrolment token

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected agents (their unfinished jobs are cancelled)")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        if not _admin_may(request, policy.AGENT_REVOKE):
            return
        for agent in queryset:
            agent_revoke(agent=agent, actor=request.user.get_username())


@admin.register(Plan)
class PlanAdmin(ReadOnlyAdmin):
    list_display = ["id", "name", "runner", "workload", "precisions", "batch_sizes", "created_by_name", "created_at"]


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "plan",
        "agent_name",
        "status",
        "attempts",
        "created_at",
        "started_at",
        "finished_at",
        "run",
        "last_error",
    ]
    list_filter = ["status", "agent_name"]
    actions = ["cancel"]

    @admin.action(description="Cancel selected jobs")
    def cancel(self, request: HttpRequest, queryset: Any) -> None:
        principal = policy.for_user(request.user)
        for job in queryset:
            if not policy.can(principal, policy.JOB_CANCEL, job):
                continue
            try:
                job_cancel(job=job, actor=request.user.get_username())
            except JobConflict as exc:
                self.message_user(request, exc.message, messages.WARNING)
