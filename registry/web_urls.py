"""URLs of the browsing UI."""

from django.contrib.auth import views as auth_views
from django.urls import path

from registry import decision_views, views, views_series

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.catalogue, name="home"),
    path("runs/<int:run_id>/", views.run_page, name="run"),
    path("runs/<int:run_id>/withdraw", views.run_withdraw, name="run-withdraw"),
    path("compare/", views.compare, name="compare"),
    path("comparisons/<int:comparison_id>/", views.comparison_page, name="comparison"),
    path("comparisons/<int:comparison_id>/charts/<slug:name>.svg", views.comparison_chart, name="comparison-chart"),
    path("comparisons/<int:comparison_id>/reports", views.report_create, name="report-create"),
    path("reports/<int:report_id>/status", views.report_status, name="report-status"),
    path("reports/<int:report_id>/pdf", views.report_pdf, name="report-pdf"),
    path("agents/", views.agents_page, name="agents"),
    path("jobs/", views.jobs_page, name="jobs"),
    path("jobs/<int:job_id>/cancel", views.job_cancel_view, name="job-cancel"),
    path("tokens/", views.tokens_page, name="tokens"),
    path("tokens/<int:token_id>/revoke", views.token_revoke_view, name="token-revoke"),
    # --- series (issue 19) ---
    path("runs/<int:run_id>/history/", views_series.run_history_page, name="run-history"),
    path("alerts/", views_series.alerts_page, name="alerts"),
    # --- decisions (issue 14) ---
    path("decisions/", decision_views.decisions_page, name="decisions"),
    path("decisions/<int:decision_id>/", decision_views.decision_page, name="decision"),
    path("decisions/<int:decision_id>/report", decision_views.decision_report_view, name="decision-report"),
    path("decisions/<int:decision_id>/plan", decision_views.decision_plan_view, name="decision-plan"),
    # --- catalogue (issue 18): the overview matrix ---
    path("matrix/", views.matrix, name="matrix"),
]
