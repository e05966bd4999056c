"""URLs of the browsing UI."""

from django.contrib.auth import views as auth_views
from django.urls import path

from registry.web import agents, audit, catalogue, comparisons, decisions, reports, runs, scaling, series, tokens

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", catalogue.catalogue, name="home"),
    path("matrix/", catalogue.matrix, name="matrix"),
    path("runs/<int:run_id>/", runs.run_page, name="run"),
    path("sweeps/compare/", runs.sweep_compare_page, name="sweep-compare"),
    # a plan id is free text up to 100 characters (protocol 1.3), "/" included: the path converter keeps it whole
    path("scaling/<path:scaling_id>/", scaling.scaling_page, name="scaling"),
    path("runs/<int:run_id>/withdraw", runs.run_withdraw, name="run-withdraw"),
    path("runs/<int:run_id>/history/", series.run_history_page, name="run-history"),
    path("runs/<int:run_id>/sizes/", scaling.run_sizes_page, name="run-sizes"),
    path("compare/", comparisons.compare, name="compare"),
    path("comparisons/<int:comparison_id>/", comparisons.comparison_page, name="comparison"),
    path(
        "comparisons/<int:comparison_id>/charts/<slug:name>.svg", comparisons.comparison_chart, name="comparison-chart"
    ),
    path("comparisons/<int:comparison_id>/reports", reports.report_create, name="report-create"),
    path("reports/<int:report_id>/status", reports.report_status, name="report-status"),
    path("reports/<int:report_id>/pdf", reports.report_pdf, name="report-pdf"),
    path("decisions/", decisions.decisions_page, name="decisions"),
    path("decisions/<int:decision_id>/", decisions.decision_page, name="decision"),
    path("decisions/<int:decision_id>/report", decisions.decision_report_view, name="decision-report"),
    path("decisions/<int:decision_id>/plan", decisions.decision_plan_view, name="decision-plan"),
    path("alerts/", series.alerts_page, name="alerts"),
    path("agents/", agents.agents_page, name="agents"),
    path("jobs/", agents.jobs_page, name="jobs"),
    path("jobs/<int:job_id>/cancel", agents.job_cancel_view, name="job-cancel"),
    path("tokens/", tokens.tokens_page, name="tokens"),
    path("tokens/<int:token_id>/revoke", tokens.token_revoke_view, name="token-revoke"),
    # the audit log: public, like its API (policy.AUDIT_PUBLIC)
    path("audit/", audit.audit_page, name="audit"),
    path("audit/runs/<int:run_id>/", audit.audit_run_page, name="audit-run"),
    path("audit/runs/<int:run_id>/proofs.json", audit.audit_run_proofs, name="audit-run-proofs"),
]
