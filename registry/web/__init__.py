"""The browsing pages, one module per thing users do, as registry.api is for the REST API.

catalogue, runs, comparisons, reports, decisions, series, agents, tokens and accounts hold the views; urls names
them; forms validate their input; exports write their CSV and JSON; charts caches their SVG; errors answers 404 and
500 outside the API; context gives every template its `can_*` flags.

Every page needs a signed-in user (login_required); registry.policy decides everything else, and what a principal
may not see answers 404 (policy's getters and policy.require raise policy.Hidden). Views call selectors and services;
forms POST with CSRF tokens. This package and registry.api never import each other.
"""
