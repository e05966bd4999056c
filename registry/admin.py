"""Admin: evidence is read-only here too; tokens can be revoked but never edited or deleted."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from registry.models import ApiToken, AuditEntry, Submission, Withdrawal
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
