"""The actions the policy decides: every door (page, API operation, service, admin, CLI) names one of these.

An action noted with `obj:` is decided per object (whose report, whose job); the others are decided by the
principal's rights alone. Which rule decides each action is the table in registry.policy.rules.
"""

from __future__ import annotations

RUN_READ = "run.read"
RUN_SUBMIT = "run.submit"
RUN_WITHDRAW = "run.withdraw"
# upload a file a run's document names (provenance.artifacts): who may submit, an agent to its own runs only
# (obj: Submission); the bytes must hash to what it names
ARTIFACT_UPLOAD = "artifact.upload"
COMPARISON_READ = "comparison.read"
COMPARISON_CREATE = "comparison.create"
REPORT_REQUEST = "report.request"
REPORT_READ = "report.read"  # obj: Report
REPORT_VERIFY = "report.verify"  # check an uploaded report, fetch the signing certificate: anyone
WITHDRAWAL_REASONS_READ = "withdrawal.reasons"
AUDIT_READ = "audit.read"
TOKEN_MANAGE = "token.manage"  # noqa: S105 - list one's own tokens, open the tokens page
TOKEN_READ = "token.read"  # noqa: S105 - obj: ApiToken
TOKEN_MINT = "token.mint"  # noqa: S105 - obj: the scopes asked for
ENROLMENT_MANAGE = "enrolment.manage"
AGENT_ENROL = "agent.enrol"  # anyone at the door: the single-use enrolment token in the body is the credential
AGENT_LIST = "agent.list"
AGENT_READ = "agent.read"  # obj: Agent (inventory, host names and addresses)
AGENT_REVOKE = "agent.revoke"
AGENT_SELF = "agent.self"  # heartbeat, `agents/me`
PLAN_CREATE = "plan.create"
GROUP_PLAN_CREATE = "plan.group.create"  # a job group: ranks on several agents (registry/services/job_groups.py)
PLAN_READ = "plan.read"  # obj: Plan
JOB_LIST = "job.list"
JOB_READ = "job.read"  # obj: Job
JOB_CANCEL = "job.cancel"  # obj: Job
JOB_WORK = "job.work"  # obj: Job (claim, start, heartbeat, complete, fail)
ADMIN_SITE = "admin.site"  # the Django admin, its actions, MLPerf uploads
PROTOCOL_READ = "protocol.read"  # the protocol as data (schema, comparability contract): anyone

# series: a schedule is its owner's, like a plan; series and alerts are read like runs
SCHEDULE_CREATE = "schedule.create"
SCHEDULE_LIST = "schedule.list"
SCHEDULE_READ = "schedule.read"  # obj: Schedule
SCHEDULE_CHANGE = "schedule.change"  # obj: Schedule (change, pause, resume, delete)
SERIES_READ = "series.read"  # series, alerts and any run's history: evidence, like runs

DECISION_CREATE = "decision.create"
DECISION_READ = "decision.read"  # obj: Decision (its owner, or an admin)
# Registering a webhook URL (a decision's, a schedule's) makes the registry send requests on the caller's behalf:
# only those who may submit, through this credential (a viewer or a read-only token may not).
WEBHOOK_REGISTER = "webhook.register"

AUDIT_PUBLIC = "audit.public"  # checkpoint, key, proofs, public entries, tlog tiles (throttled, scope `audit`)
HEALTH_READ = "health.read"  # /healthz, /readyz: probes from orchestrators, without credentials
