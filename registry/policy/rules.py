"""The registry's one authorization policy: who may do what to which object.

Every door asks this module: web views, API views (registry.api.permissions), services, the admin and the
CLI. Nothing else decides.

Roles are Django groups (viewer, submitter, admin); superusers and staff count as admin. A signed-in user in no
group may read (runs are public evidence inside the registry). Rights are the token scopes a role could use:

    viewer     read
    submitter  read, submit
    admin      read, submit, admin

A principal is whoever is asking, with the rights in force for this request:
  * a session user: the rights of their roles;
  * an API token: the token's scopes ∩ its owner's rights *now*, so a demoted owner's old token loses what the
    owner lost, and a token never carries more than its owner may do;
  * an enrolled agent (a live Agent's own token): its scopes ∩ {agent, submit}: it works on its own jobs and
    submits their runs, nothing else;
  * anonymous: no rights.

`can(principal, action, obj)` answers one question; the getters return the object or raise `Hidden` (a 404,
both as a registry NotFound for the API and as Http404 for pages), so nobody learns what exists behind a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404

from registry.exceptions import NotFound, RegistryError

# --- roles and scopes, defined once -------------------------------------------------------------------------

VIEWER, SUBMITTER, ADMIN = "viewer", "submitter", "admin"
ROLES = (VIEWER, SUBMITTER, ADMIN)
READ, SUBMIT, AGENT = "read", "submit", "agent"
ROLE_RIGHTS: dict[str, frozenset[str]] = {
    VIEWER: frozenset({READ}),
    SUBMITTER: frozenset({READ, SUBMIT}),
    ADMIN: frozenset({READ, SUBMIT, ADMIN}),
}
AGENT_RIGHTS = frozenset({AGENT, SUBMIT})
SIGNED_IN_RIGHTS = frozenset({READ})  # any active signed-in user, whatever their groups


class Hidden(NotFound, Http404):
    """'Not found': what the caller may not see answers exactly like what does not exist (404 everywhere)."""


class Refused(RegistryError):
    """The caller is known but may not do this (403): the object is theirs to see, the act is not."""

    status = 403
    code = "forbidden"


# --- principals ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    user: Any  # AbstractBaseUser or AnonymousUser
    rights: frozenset[str]
    token: Any = None  # the ApiToken the request came with, if any
    agent: Any = None  # the live Agent whose token this is, if any

    @property
    def kind(self) -> str:
        if self.agent is not None:
            return "agent"
        if self.token is not None:
            return "token"
        return "user" if self.user.is_authenticated else "anonymous"

    @property
    def is_person(self) -> bool:
        """A person (session or personal token), not an agent and not anonymous."""
        return self.agent is None and self.user.is_authenticated

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user.is_authenticated else None

    def has(self, right: str) -> bool:
        return right in self.rights

    def __str__(self) -> str:
        name = self.user.get_username() if self.user.is_authenticated else "anonymous"
        return f"{self.kind}:{name}"


ANONYMOUS = Principal(user=AnonymousUser(), rights=frozenset())


def user_roles(user: Any) -> frozenset[str]:
    """The user's roles with what they imply: an admin is also a submitter and a viewer."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser or user.is_staff:
        return frozenset(ROLES)
    cached = getattr(user, "_benchreg_roles", None)
    if cached is None:
        cached = remember_groups(user, user.groups.values_list("name", flat=True))
    return cached


def remember_groups(user: Any, names: Iterable[str]) -> frozenset[str]:
    """Keep the roles that the user's group `names` give on the user object, for the rest of the request (token
    authentication reads the names with the token, in one query)."""
    groups = set(names) & set(ROLES)
    implied = {VIEWER} | groups
    if ADMIN in groups:
        implied |= {SUBMITTER}
    roles = frozenset(implied)
    user._benchreg_roles = roles
    return roles


def user_rights(user: Any) -> frozenset[str]:
    """What a user may do through any credential: the union of their roles' rights."""
    roles = user_roles(user)
    if not roles:
        return frozenset()
    rights = set(SIGNED_IN_RIGHTS)
    for role in roles:
        rights |= ROLE_RIGHTS[role]
    return frozenset(rights)


def for_user(user: Any) -> Principal:
    """A session user (web pages, the admin) or a user acting at the shell."""
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    return Principal(user=user, rights=user_rights(user))


def token_agent(token: Any) -> Any:
    """The live agent acting through this token, or None (no token, a person's token, a revoked agent)."""
    from django.core.exceptions import ObjectDoesNotExist

    if token is None:
        return None
    try:
        agent = token.agent  # fetched with the token by TokenAuthentication (select_related)
    except ObjectDoesNotExist:
        return None
    return agent if agent.revoked_at is None else None


def for_token(token: Any) -> Principal:
    """A request authenticated by an API token: rights evaluated now, never more than the owner's."""
    agent = token_agent(token)
    scopes = frozenset(token.scopes)
    if agent is not None:
        return Principal(user=token.user, rights=scopes & AGENT_RIGHTS, token=token, agent=agent)
    owner = user_rights(token.user)
    return Principal(user=token.user, rights=(scopes & owner) - {AGENT}, token=token)


def for_request(request: Any) -> Principal:
    """The principal of a Django or DRF request, computed once per request."""
    from registry.models import ApiToken

    raw = getattr(request, "_request", request)  # the Django request under a DRF one
    cached = getattr(raw, "_benchreg_principal", None)
    auth = getattr(request, "auth", None)
    if cached is not None and cached.token is (auth if isinstance(auth, ApiToken) else None):
        return cached  # type: ignore[no-any-return]
    principal = for_token(auth) if isinstance(auth, ApiToken) else for_user(getattr(request, "user", None))
    raw._benchreg_principal = principal
    return principal


# --- actions ------------------------------------------------------------------------------------------------

RUN_READ = "run.read"
RUN_SUBMIT = "run.submit"
RUN_WITHDRAW = "run.withdraw"
COMPARISON_READ = "comparison.read"
COMPARISON_CREATE = "comparison.create"
REPORT_REQUEST = "report.request"
REPORT_READ = "report.read"  # obj: Report
WITHDRAWAL_REASONS_READ = "withdrawal.reasons"
AUDIT_READ = "audit.read"
TOKEN_MANAGE = "token.manage"  # noqa: S105 - list one's own tokens, open the tokens page
TOKEN_READ = "token.read"  # noqa: S105 - obj: ApiToken
TOKEN_MINT = "token.mint"  # noqa: S105 - obj: the scopes asked for
ENROLMENT_MANAGE = "enrolment.manage"
AGENT_LIST = "agent.list"
AGENT_READ = "agent.read"  # obj: Agent (inventory, host names and addresses)
AGENT_REVOKE = "agent.revoke"
AGENT_SELF = "agent.self"  # heartbeat, `agents/me`
PLAN_CREATE = "plan.create"
PLAN_READ = "plan.read"  # obj: Plan
JOB_LIST = "job.list"
JOB_READ = "job.read"  # obj: Job
JOB_CANCEL = "job.cancel"  # obj: Job
JOB_WORK = "job.work"  # obj: Job (claim, start, heartbeat, complete, fail)
ADMIN_SITE = "admin.site"  # the Django admin, its actions, MLPerf uploads
# series (issue 19)
SCHEDULE_CREATE = "schedule.create"
SCHEDULE_LIST = "schedule.list"
SCHEDULE_READ = "schedule.read"  # obj: Schedule
SCHEDULE_CHANGE = "schedule.change"  # obj: Schedule (change, pause, resume, delete)
SERIES_READ = "series.read"  # series, alerts and any run's history: evidence, like runs

# --- decisions (issue 14) ---
DECISION_CREATE = "decision.create"
DECISION_READ = "decision.read"  # obj: Decision (its owner, or an admin)
# Registering a webhook URL (a decision's, a schedule's) makes the registry send requests on the caller's behalf:
# only those who may submit, through this credential (a viewer or a read-only token may not).
WEBHOOK_REGISTER = "webhook.register"

# --- audit log, public (issue 15): anyone may fetch and verify the log ---------------------------------------
AUDIT_PUBLIC = "audit.public"  # checkpoint, key, proofs, public entries, tlog tiles (throttled, scope `audit`)


HEALTH_READ = "health.read"  # /healthz, /readyz: probes from orchestrators, without credentials


def _anyone(p: Principal, obj: Any = None) -> bool:
    return True


def _reader(p: Principal, obj: Any = None) -> bool:
    return p.has(READ)


def _person_reader(p: Principal, obj: Any = None) -> bool:
    return p.is_person and p.has(READ)


def _submitter(p: Principal, obj: Any = None) -> bool:
    return p.has(SUBMIT)


def _person_submitter(p: Principal, obj: Any = None) -> bool:
    return p.is_person and p.has(SUBMIT)


def _person_admin(p: Principal, obj: Any = None) -> bool:
    return p.is_person and p.has(ADMIN)


def _admin_site(p: Principal, obj: Any = None) -> bool:
    return p.is_person and p.token is None and p.has(ADMIN)


def _planner(p: Principal, obj: Any = None) -> bool:
    return p.is_person and (p.has(SUBMIT) or p.has(ADMIN))


def _report_read(p: Principal, report: Any) -> bool:
    return p.has(READ) and (p.has(ADMIN) or report is None or report.requested_by_id == p.user_id)


def _token_read(p: Principal, token: Any) -> bool:
    return _person_reader(p) and (token is None or token.user_id == p.user_id)


def _token_mint(p: Principal, scopes: Iterable[str] | None) -> bool:
    return _person_reader(p) and set(scopes or ()) <= mintable_scopes(p)


def _agent_read(p: Principal, agent: Any) -> bool:
    return p.has(ADMIN) or (agent is not None and p.agent is not None and p.agent.pk == agent.pk)


def _agent_self(p: Principal, obj: Any = None) -> bool:
    return p.agent is not None and p.has(AGENT)


def _plan_owner(p: Principal, plan: Any) -> bool:
    return p.is_person and p.has(READ) and plan is not None and plan.created_by_id == p.user_id


def _plan_read(p: Principal, plan: Any) -> bool:
    return (p.is_person and p.has(ADMIN)) or _plan_owner(p, plan)


def _job_read(p: Principal, job: Any) -> bool:
    if job is None:
        return False
    if p.agent is not None:
        return p.has(AGENT) and job.agent_id == p.agent.pk
    return p.has(ADMIN) or _plan_owner(p, job.plan)


def _job_cancel(p: Principal, job: Any) -> bool:
    if not p.is_person or job is None:
        return False
    return p.has(ADMIN) or (p.has(SUBMIT) and _plan_owner(p, job.plan))


def _decision_read(p: Principal, decision: Any) -> bool:
    return p.has(READ) and (p.has(ADMIN) or decision is None or decision.owner_id == p.user_id)


def _job_work(p: Principal, job: Any) -> bool:
    return _agent_self(p) and job is not None and job.agent_id == p.agent.pk


# --- series (issue 19): a schedule is its owner's (like a plan); series and alerts are read like runs ---
def _schedule_read(p: Principal, schedule: Any) -> bool:
    return (p.is_person and p.has(ADMIN)) or (
        p.is_person and p.has(READ) and schedule is not None and schedule.created_by_id == p.user_id
    )


def _schedule_change(p: Principal, schedule: Any) -> bool:
    if not p.is_person or schedule is None:
        return False
    return p.has(ADMIN) or (p.has(SUBMIT) and _schedule_read(p, schedule))


RULES: dict[str, Callable[[Principal, Any], bool]] = {
    RUN_READ: _reader,
    RUN_SUBMIT: _submitter,
    RUN_WITHDRAW: _person_admin,
    COMPARISON_READ: _reader,
    COMPARISON_CREATE: _person_reader,
    REPORT_REQUEST: _person_reader,
    REPORT_READ: _report_read,
    WITHDRAWAL_REASONS_READ: _reader,
    AUDIT_READ: _reader,
    TOKEN_MANAGE: _person_reader,
    TOKEN_READ: _token_read,
    TOKEN_MINT: _token_mint,
    ENROLMENT_MANAGE: _person_admin,
    AGENT_LIST: _planner,
    AGENT_READ: _agent_read,
    AGENT_REVOKE: _person_admin,
    AGENT_SELF: _agent_self,
    PLAN_CREATE: _planner,
    PLAN_READ: _plan_read,
    JOB_LIST: _planner,
    JOB_READ: _job_read,
    JOB_CANCEL: _job_cancel,
    JOB_WORK: _job_work,
    ADMIN_SITE: _admin_site,
    # audit log, public (issue 15); AUDIT_READ above still guards format-1 entry texts, which name users
    AUDIT_PUBLIC: _anyone,
    # series (issue 19)
    SCHEDULE_CREATE: _planner,
    SCHEDULE_LIST: _planner,
    SCHEDULE_READ: _schedule_read,
    SCHEDULE_CHANGE: _schedule_change,
    SERIES_READ: _reader,
    # --- decisions (issue 14) ---
    DECISION_CREATE: _person_reader,
    DECISION_READ: _decision_read,
    WEBHOOK_REGISTER: _person_submitter,
}


# --- operations (issue 17) ---------------------------------------------------------------------------------

RULES[HEALTH_READ] = _anyone


def open_to_anyone(action: str | None) -> bool:
    """Whether `action` needs no credential at all (the API description then lists no security requirement)."""
    return action is not None and RULES.get(action) is _anyone


def can(principal: Principal, action: str, obj: Any = None) -> bool:
    try:
        rule = RULES[action]
    except KeyError:
        raise ValueError(f"no policy rule for action {action!r}") from None
    return bool(rule(principal, obj))


def require(principal: Principal, action: str, obj: Any = None, *, hidden: bool = True) -> None:
    """Raise unless allowed: Hidden (404) by default; Refused (403) where the caller may see the object."""
    if not can(principal, action, obj):
        if hidden:
            raise Hidden(f"nothing here for {principal.kind} (needs {action})")
        raise Refused(f"this credential may not {action.replace('.', ' ')}")


def mintable_scopes(principal: Principal) -> frozenset[str]:
    """Scopes this caller may put on a new token: what it may do itself. `agent` comes only from enrolment."""
    if not principal.is_person:
        return frozenset()
    return principal.rights - {AGENT}


def least_role_for(scopes: Iterable[str]) -> str:
    """The weakest role whose rights cover these scopes (for the CLI, which sets up script accounts)."""
    wanted = set(scopes) - {AGENT}
    for role in ROLES:
        if wanted <= ROLE_RIGHTS[role]:
            return role
    raise RegistryError(f"no role covers the scopes {sorted(wanted)}", code="invalid-scopes")


# --- what a principal may see: querysets and getters --------------------------------------------------------


def visible_reports(principal: Principal, reports: QuerySet[Any]) -> QuerySet[Any]:
    if not principal.has(READ):
        return reports.none()
    return reports if principal.has(ADMIN) else reports.filter(requested_by_id=principal.user_id)


def visible_plans(principal: Principal, plans: QuerySet[Any]) -> QuerySet[Any]:
    if principal.is_person and principal.has(ADMIN):
        return plans
    if principal.is_person and principal.has(READ):
        return plans.filter(created_by_id=principal.user_id)
    return plans.none()


def visible_jobs(principal: Principal, jobs: QuerySet[Any]) -> QuerySet[Any]:
    if principal.agent is not None:
        return jobs.filter(agent_id=principal.agent.pk) if principal.has(AGENT) else jobs.none()
    if principal.is_person and principal.has(ADMIN):
        return jobs
    if principal.is_person and principal.has(READ):
        return jobs.filter(Q(plan__created_by_id=principal.user_id))
    return jobs.none()


def _get(principal: Principal, action: str, fetch: Callable[[], Any], what: str) -> Any:
    """The object if it exists and the principal may `action` it; otherwise Hidden, the same either way."""
    try:
        obj = fetch()
    except NotFound:
        raise Hidden(f"no {what}") from None
    if not can(principal, action, obj):
        raise Hidden(f"no {what}")
    return obj


def run_get(principal: Principal, run_id: int, action: str = RUN_READ) -> Any:
    """A run the principal may `action` (read, by default; an admin token without `read` may still withdraw)."""
    from registry.selectors.submissions import submission_get

    return _get(principal, action, lambda: submission_get(run_id=run_id), f"run {run_id}")


def comparison_get(principal: Principal, comparison_id: int) -> Any:
    from registry.selectors.comparisons import comparison_get as select

    return _get(principal, COMPARISON_READ, lambda: select(comparison_id=comparison_id), f"comparison {comparison_id}")


def visible_decisions(principal: Principal, decisions: QuerySet[Any]) -> QuerySet[Any]:
    if not principal.has(READ):
        return decisions.none()
    return decisions if principal.has(ADMIN) else decisions.filter(owner_id=principal.user_id)


def decision_get(principal: Principal, decision_id: int) -> Any:
    from registry.selectors.decisions import decision_get as select

    return _get(principal, DECISION_READ, lambda: select(decision_id=decision_id), f"decision {decision_id}")


def report_get(principal: Principal, report_id: int) -> Any:
    from registry.selectors.reports import report_get as select

    return _get(principal, REPORT_READ, lambda: select(report_id=report_id), f"report {report_id}")


def token_get(principal: Principal, token_id: int) -> Any:
    from registry.selectors.tokens import token_get_for

    require(principal, TOKEN_MANAGE)
    return _get(
        principal, TOKEN_READ, lambda: token_get_for(user=principal.user, token_id=token_id), f"token {token_id}"
    )


def agent_get(principal: Principal, agent_id: int, action: str = AGENT_READ) -> Any:
    from registry.selectors.agents import agent_get as select

    return _get(principal, action, lambda: select(agent_id=agent_id), f"agent {agent_id}")


def plan_get(principal: Principal, plan_id: int) -> Any:
    from registry.selectors.agents import plan_get as select

    return _get(principal, PLAN_READ, lambda: select(plan_id=plan_id), f"plan {plan_id}")


def job_get(principal: Principal, job_id: int, action: str = JOB_READ) -> Any:
    """A job the principal may `action`; one it may read but not act on is 403, anything else 404."""
    from registry.selectors.agents import job_get as select

    job = _get(principal, JOB_READ, lambda: select(job_id=job_id), f"job {job_id}")
    if action != JOB_READ:
        require(principal, action, job, hidden=False)
    return job


# --- series (issue 19) ------------------------------------------------------------------------------------------


def visible_schedules(principal: Principal, schedules: QuerySet[Any]) -> QuerySet[Any]:
    if principal.is_person and principal.has(ADMIN):
        return schedules
    if principal.is_person and principal.has(READ):
        return schedules.filter(created_by_id=principal.user_id)
    return schedules.none()


def schedule_get(principal: Principal, schedule_id: int, action: str = SCHEDULE_READ) -> Any:
    """A schedule the principal may `action`: one it may read but not change is 403, anything else 404."""
    from registry.models import Schedule

    def fetch() -> Any:
        found = Schedule.objects.select_related("plan").filter(pk=schedule_id).first()
        if found is None:
            raise NotFound(f"no schedule {schedule_id}")
        return found

    schedule = _get(principal, SCHEDULE_READ, fetch, f"schedule {schedule_id}")
    if action != SCHEDULE_READ:
        require(principal, action, schedule, hidden=False)
    return schedule


def series_get(principal: Principal, series_id: int) -> Any:
    from registry.models import Series

    def fetch() -> Any:
        found = Series.objects.select_related("agent", "schedule").filter(pk=series_id).first()
        if found is None:
            raise NotFound(f"no series {series_id}")
        return found

    return _get(principal, SERIES_READ, fetch, f"series {series_id}")


def alert_get(principal: Principal, alert_id: int) -> Any:
    from registry.selectors.series import alert_list

    def fetch() -> Any:
        found = alert_list().filter(pk=alert_id).first()
        if found is None:
            raise NotFound(f"no alert {alert_id}")
        return found

    return _get(principal, SERIES_READ, fetch, f"alert {alert_id}")
