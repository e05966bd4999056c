"""The pure rules: roles, rights, and who may do which action. No database here: a rule reads the principal and,
for actions decided per object, the object it is given.

Roles are Django groups (viewer, submitter, admin); superusers and staff count as admin. A signed-in user in no
group may read (runs are public evidence inside the registry). Rights are the token scopes a role could use:

    viewer     read
    submitter  read, submit
    admin      read, submit, admin

`can(principal, action, obj)` answers one question; `admits(principal, action)` is the door of an operation,
asked before any object is looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.http import Http404

from registry.exceptions import NotFound, RegistryError
from registry.policy.actions import (
    ADMIN_SITE,
    AGENT_ENROL,
    AGENT_LIST,
    AGENT_READ,
    AGENT_REVOKE,
    AGENT_SELF,
    ARTIFACT_UPLOAD,
    AUDIT_PUBLIC,
    AUDIT_READ,
    COMPARISON_CREATE,
    COMPARISON_READ,
    DECISION_CREATE,
    DECISION_READ,
    ENROLMENT_MANAGE,
    GROUP_PLAN_CREATE,
    HEALTH_READ,
    JOB_CANCEL,
    JOB_LIST,
    JOB_READ,
    JOB_WORK,
    PLAN_CREATE,
    PLAN_READ,
    PROTOCOL_READ,
    REPORT_READ,
    REPORT_REQUEST,
    REPORT_VERIFY,
    RUN_READ,
    RUN_SUBMIT,
    RUN_WITHDRAW,
    SCHEDULE_CHANGE,
    SCHEDULE_CREATE,
    SCHEDULE_LIST,
    SCHEDULE_READ,
    SERIES_READ,
    TOKEN_MANAGE,
    TOKEN_MINT,
    TOKEN_READ,
    WEBHOOK_REGISTER,
    WITHDRAWAL_REASONS_READ,
)

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


def roles_from_groups(names: Iterable[str]) -> frozenset[str]:
    """The roles that group `names` give, with what they imply: an admin is also a submitter and a viewer."""
    groups = set(names) & set(ROLES)
    implied = {VIEWER} | groups
    if ADMIN in groups:
        implied |= {SUBMITTER}
    return frozenset(implied)


def rights_of(roles: Iterable[str]) -> frozenset[str]:
    """What holders of these roles may do through any credential: the union of the roles' rights."""
    roles = frozenset(roles)
    if not roles:
        return frozenset()
    rights = set(SIGNED_IN_RIGHTS)
    for role in roles:
        rights |= ROLE_RIGHTS[role]
    return frozenset(rights)


# --- the principal ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    """Whoever is asking, with the rights in force for this request (built by registry.policy.principals)."""

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


# --- the rules ----------------------------------------------------------------------------------------------
def _anyone(p: Principal, obj: Any = None) -> bool:
    return True


def _reader(p: Principal, obj: Any = None) -> bool:
    return p.has(READ)


def _person_reader(p: Principal, obj: Any = None) -> bool:
    return p.is_person and p.has(READ)


def _submitter(p: Principal, obj: Any = None) -> bool:
    return p.has(SUBMIT)


def _artifact_upload(p: Principal, run: Any = None) -> bool:
    """Who may submit; an agent only to a run it submitted itself (at the door, before the run is known, it passes
    on its right alone; the getter then hides any other run from it, as for one that does not exist)."""
    if not p.has(SUBMIT):
        return False
    return p.agent is None or run is None or run.submitted_by_id == p.user_id


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
    ARTIFACT_UPLOAD: _artifact_upload,
    COMPARISON_READ: _reader,
    COMPARISON_CREATE: _person_reader,
    REPORT_REQUEST: _person_reader,
    REPORT_READ: _report_read,
    REPORT_VERIFY: _anyone,
    WITHDRAWAL_REASONS_READ: _reader,
    AUDIT_READ: _reader,  # format-1 entry texts, which name users (the rest of the log is AUDIT_PUBLIC)
    TOKEN_MANAGE: _person_reader,
    TOKEN_READ: _token_read,
    TOKEN_MINT: _token_mint,
    ENROLMENT_MANAGE: _person_admin,
    AGENT_ENROL: _anyone,
    AGENT_LIST: _planner,
    AGENT_READ: _agent_read,
    AGENT_REVOKE: _person_admin,
    AGENT_SELF: _agent_self,
    PLAN_CREATE: _planner,
    GROUP_PLAN_CREATE: _planner,  # as any plan: the agents' owners enrolled them to run the registry's plans
    PLAN_READ: _plan_read,
    JOB_LIST: _planner,
    JOB_READ: _job_read,
    JOB_CANCEL: _job_cancel,
    JOB_WORK: _job_work,
    ADMIN_SITE: _admin_site,
    PROTOCOL_READ: _anyone,
    AUDIT_PUBLIC: _anyone,
    SCHEDULE_CREATE: _planner,
    SCHEDULE_LIST: _planner,
    SCHEDULE_READ: _schedule_read,
    SCHEDULE_CHANGE: _schedule_change,
    SERIES_READ: _reader,
    DECISION_CREATE: _person_reader,
    DECISION_READ: _decision_read,
    WEBHOOK_REGISTER: _person_submitter,
    HEALTH_READ: _anyone,
}

# Actions whose rule needs the object: at an operation's door any known caller passes (an unknown one is asked
# to authenticate), then the getter answers 404 for an object the caller may not see, as for one that does not
# exist. Asking their rules without the object would answer 403 and tell a caller that such objects exist.
DECIDED_PER_OBJECT = frozenset({AGENT_READ, PLAN_READ, JOB_READ, JOB_CANCEL, SCHEDULE_READ, SCHEDULE_CHANGE})


def open_to_anyone(action: str | None) -> bool:
    """Whether `action` needs no credential at all (the API description then lists no security requirement)."""
    return action is not None and RULES.get(action) is _anyone


def admits(principal: Principal, action: str) -> bool:
    """Whether the caller passes the door of an operation for `action`, before any object is looked at."""
    if action in DECIDED_PER_OBJECT:
        return bool(principal.user.is_authenticated)
    return can(principal, action)


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
