from django.urls import path, re_path

from registry.api import (
    agents,
    artifacts,
    audit,
    comparisons,
    decisions,  # decisions
    job_groups,
    protocol,
    reports,
    series,  # series
    submissions,
    tokens,
)

urlpatterns = [
    path("submissions", submissions.SubmissionCollectionApi.as_view(), name="api-submissions"),
    path("submissions/<int:run_id>", submissions.SubmissionDetailApi.as_view(), name="api-submission-detail"),
    path(
        "submissions/<int:run_id>/document", submissions.SubmissionDocumentApi.as_view(), name="api-submission-document"
    ),
    path(
        "submissions/<int:run_id>/artifacts/<str:sha256>",
        artifacts.SubmissionArtifactApi.as_view(),
        name="api-submission-artifact",
    ),
    path(
        "submissions/<int:run_id>/withdraw", submissions.SubmissionWithdrawApi.as_view(), name="api-submission-withdraw"
    ),
    path(
        "submissions/<int:run_id>/comparable", comparisons.ComparableRunsApi.as_view(), name="api-submission-comparable"
    ),
    path("submissions/<int:run_id>/sizes", comparisons.SubmissionSizesApi.as_view(), name="api-submission-sizes"),
    path("comparisons", comparisons.ComparisonCollectionApi.as_view(), name="api-comparisons"),
    path("comparisons/<int:comparison_id>", comparisons.ComparisonDetailApi.as_view(), name="api-comparison-detail"),
    path("reports", reports.ReportCollectionApi.as_view(), name="api-reports"),
    path("reports/verify", reports.ReportVerifyApi.as_view(), name="api-report-verify"),
    path("reports/certificate", reports.ReportCertificateApi.as_view(), name="api-report-certificate"),
    path("reports/<int:report_id>", reports.ReportDetailApi.as_view(), name="api-report-detail"),
    path("reports/<int:report_id>/pdf", reports.ReportPdfApi.as_view(), name="api-report-pdf"),
    path("tokens", tokens.TokenCollectionApi.as_view(), name="api-tokens"),
    path("tokens/<int:token_id>", tokens.TokenRevokeApi.as_view(), name="api-token-revoke"),
    path("protocol", protocol.ProtocolApi.as_view(), name="api-protocol"),
    path("audit/checkpoint", audit.AuditCheckpointApi.as_view(), name="api-audit-checkpoint"),
    path("audit/public-key", audit.AuditPublicKeyApi.as_view(), name="api-audit-public-key"),
    path("audit/inclusion", audit.AuditInclusionApi.as_view(), name="api-audit-inclusion"),
    path("audit/consistency", audit.AuditConsistencyApi.as_view(), name="api-audit-consistency"),
    path("audit/entries", audit.AuditEntryListApi.as_view(), name="api-audit-entries"),
    path("enrolment-tokens", agents.EnrolmentTokenCollectionApi.as_view(), name="api-enrolment-tokens"),
    path("agents", agents.AgentCollectionApi.as_view(), name="api-agents"),
    path("agents/enroll", agents.AgentEnrollApi.as_view(), name="api-agent-enroll"),
    path("agents/me", agents.AgentMeApi.as_view(), name="api-agent-me"),
    path("agents/heartbeat", agents.AgentHeartbeatApi.as_view(), name="api-agent-heartbeat"),
    path("agents/<int:agent_id>", agents.AgentDetailApi.as_view(), name="api-agent-detail"),
    path("agents/<int:agent_id>/revoke", agents.AgentRevokeApi.as_view(), name="api-agent-revoke"),
    path("plans", agents.PlanCollectionApi.as_view(), name="api-plans"),
    path("plans/groups", job_groups.GroupPlanCreateApi.as_view(), name="api-plan-groups"),
    path("plans/<int:plan_id>", agents.PlanDetailApi.as_view(), name="api-plan-detail"),
    path("jobs", agents.JobCollectionApi.as_view(), name="api-jobs"),
    path("jobs/<int:job_id>", agents.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/cancel", agents.JobCancelApi.as_view(), name="api-job-cancel"),
    path("jobs/<int:job_id>/claim", agents.JobClaimApi.as_view(), name="api-job-claim"),
    path("jobs/<int:job_id>/start", agents.JobStartApi.as_view(), name="api-job-start"),
    path("jobs/<int:job_id>/heartbeat", agents.JobHeartbeatApi.as_view(), name="api-job-heartbeat"),
    path("jobs/<int:job_id>/complete", agents.JobCompleteApi.as_view(), name="api-job-complete"),
    path("jobs/<int:job_id>/fail", agents.JobFailApi.as_view(), name="api-job-fail"),
    path("jobs/<int:job_id>/arrive", job_groups.JobGroupArriveApi.as_view(), name="api-job-arrive"),
    path("jobs/<int:job_id>/group", job_groups.JobGroupApi.as_view(), name="api-job-group"),
    # --- audit log in the C2SP tlog-tiles layout ---
    path("audit/log/checkpoint", audit.AuditLogCheckpointApi.as_view(), name="api-audit-log-checkpoint"),
    re_path(
        r"^audit/log/tile/entries/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})$",
        audit.AuditEntryBundleApi.as_view(),
        name="api-audit-log-entries",
    ),
    re_path(
        r"^audit/log/tile/entries/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})\.p/(?P<width>[0-9]{1,3})$",
        audit.AuditEntryBundleApi.as_view(),
        name="api-audit-log-entries-partial",
    ),
    re_path(
        r"^audit/log/tile/(?P<level>[0-9]{1,2})/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})$",
        audit.AuditHashTileApi.as_view(),
        name="api-audit-log-tile",
    ),
    re_path(
        r"^audit/log/tile/(?P<level>[0-9]{1,2})/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})\.p/(?P<width>[0-9]{1,3})$",
        audit.AuditHashTileApi.as_view(),
        name="api-audit-log-tile-partial",
    ),
    # --- series ---
    path("schedules", series.ScheduleCollectionApi.as_view(), name="api-schedules"),
    path("schedules/<int:schedule_id>", series.ScheduleDetailApi.as_view(), name="api-schedule-detail"),
    path("series", series.SeriesCollectionApi.as_view(), name="api-series"),
    path("series/<int:series_id>", series.SeriesDetailApi.as_view(), name="api-series-detail"),
    path("alerts", series.AlertCollectionApi.as_view(), name="api-alerts"),
    path("alerts/<int:alert_id>", series.AlertDetailApi.as_view(), name="api-alert-detail"),
    path("submissions/<int:run_id>/history", series.SubmissionHistoryApi.as_view(), name="api-submission-history"),
    # --- decisions ---
    path("decisions", decisions.DecisionCollectionApi.as_view(), name="api-decisions"),
    path("decisions/<int:decision_id>", decisions.DecisionDetailApi.as_view(), name="api-decision-detail"),
    path("decisions/<int:decision_id>/export", decisions.DecisionExportApi.as_view(), name="api-decision-export"),
    path("decisions/<int:decision_id>/reports", decisions.DecisionReportApi.as_view(), name="api-decision-reports"),
    path("decisions/<int:decision_id>/plans", decisions.DecisionGapPlanApi.as_view(), name="api-decision-plans"),
]
