"""A user's API tokens: list, mint (only scopes the user may use) and revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from registry import policy
from registry.exceptions import RegistryError
from registry.selectors.submissions import submission_list
from registry.selectors.tokens import token_list_for
from registry.services.tokens import token_mint, token_revoke
from registry.web.context import signed_in_user
from registry.web.forms import TokenCreateForm


@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request: HttpRequest) -> HttpResponse:
    """The user's tokens; the form offers only the scopes the user may use (policy.mintable_scopes)."""
    principal = policy.for_request(request)
    policy.require(principal, policy.TOKEN_MANAGE)
    mintable = policy.mintable_scopes(principal)
    form, plain = TokenCreateForm(mintable=mintable), None
    if request.method == "POST":
        form, plain = _mint(request, principal, mintable)
    tokens = token_list_for(user=signed_in_user(request)).order_by("-id")
    return render(
        request,
        "registry/tokens.html",
        {
            "form": form,
            "plain": plain,
            "tokens": tokens,
            "submissions": submission_list().filter(submitted_by=signed_in_user(request))[:20],
        },
    )


def _mint(
    request: HttpRequest, principal: policy.Principal, mintable: frozenset[str]
) -> tuple[TokenCreateForm, str | None]:
    """The posted form's token: (a fresh form, its plain text) when minted, else (the form with its errors, None)."""
    form = TokenCreateForm(request.POST, mintable=mintable)
    if form.is_valid():
        try:
            _, plain = token_mint(
                principal=principal, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
            )
            return TokenCreateForm(mintable=mintable), plain
        except RegistryError as exc:
            form.add_error("scopes", exc.message)
    return form, None


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    token = policy.token_get(policy.for_request(request), token_id)
    token_revoke(token=token, actor=request.user.get_username())
    messages.success(request, f"Token {token.prefix}… is revoked.")
    return redirect("tokens")
