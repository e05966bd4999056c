"""The admin site, its door decided by registry.policy (ADMIN_SITE: admins by role, staff and superusers)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest

from registry import policy


class PolicyAdminLoginForm(AuthenticationForm):
    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not policy.can(policy.for_user(user), policy.ADMIN_SITE):
            raise forms.ValidationError("This account is not an administrator's.", code="invalid_login")


class PolicyAdminSite(admin.AdminSite):
    login_form = PolicyAdminLoginForm

    def has_permission(self, request: HttpRequest) -> bool:
        return policy.can(policy.for_user(request.user), policy.ADMIN_SITE)
