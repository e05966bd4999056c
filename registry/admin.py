"""Admin: evidence is read-only here too; tokens can be revoked but never edited or deleted."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils import timezone

from registry.models import Agent, ApiToken, AuditEntry, EnrolmentToken, Job, Plan, Submission, Withdrawal
from registry.services.agents import agent_revoke, enrolment_token_create
from registry.services.jobs import JobConflict, job_cancel
from registry.services.tokens import token_revoke


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ["id", "workload_name", "scenario_kind", "precision_weights", "batch_size", "system_name",
                    "headline_value", "headline_unit", "submitted_by_name", "submitted_at"]
    list_filter = ["phase", "scenario_kind", "precision_weights", "accelerator_vendor"]
    search_fields = ["digest", "workload_name", "system_name", "submitter"]
    exclude = ["document"]


@admin.register(Withdrawal)
class WithdrawalAdmin(ReadOnlyAdmin):
    list_display = ["submission", "reason", "withdrawn_by_name", "withdrawn_at"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["seq", "kind", "actor", "subject", "created_at"]
    list_filter = ["kind"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "scopes", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["user", "name", "prefix", "key_hash", "scopes", "created_at", "last_used_at",
                       "expires_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are created with `create_token` or the API, which show the token once

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset:
            token_revoke(token=token, actor=request.user.get_username())


@admin.register(EnrolmentToken)
class EnrolmentTokenAdmin(admin.ModelAdmin):
    """Add one to get a single-use token, shown once in the message bar; rows are never edited."""

    list_display = ["prefix", "note", "created_by_name", "created_at", "expires_at", "used_at"]
    fields = ["note", "expires_at"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        row, plain = enrolment_token_create(created_by=request.user, note=obj.note,  # type: ignore[arg-type]
                                            expires_in=obj.expires_at - timezone.now())
        obj.pk, obj.prefix, obj.key_hash = row.pk, row.prefix, row.key_hash
        obj._state.adding = False
        self.message_user(request, f"Enrolment token (shown once, single use): {plain}", messages.WARNING)


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "queue", "is_online", "last_heartbeat_at", "enrolled_at", "revoked_at"]
    readonly_fields = ["name", "queue", "user", "token", "enrolment", "embedded", "inventory", "enrolled_at",
                       "last_heartbeat_at", "online", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # machines enrol themselves with an enrolment token

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected agents (their unfinished jobs are cancelled)")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for agent in queryset:
            agent_revoke(agent=agent, actor=request.user.get_username())


@admin.register(Plan)
class PlanAdmin(ReadOnlyAdmin):
    list_display = ["id", "name", "runner", "workload", "precisions", "batch_sizes", "created_by_name",
                    "created_at"]


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ["id", "plan", "agent_name", "status", "attempts", "created_at", "started_at", "finished_at",
                    "run", "last_error"]
    list_filter = ["status", "agent_name"]
    actions = ["cancel"]

    @admin.action(description="Cancel selected jobs")
    def cancel(self, request: HttpRequest, queryset: Any) -> None:
        for job in queryset:
            try:
                job_cancel(job=job, actor=request.user.get_username())
            except JobConflict as exc:
                self.message_user(request, exc.message, messages.WARNING)
