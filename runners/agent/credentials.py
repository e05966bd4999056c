"""The agent's credential file: where the registry and the broker are, the agent's name, queue and token.

Written once at enrolment with mode 0600 (it holds a bearer token and possibly broker credentials). Tuning
values come from the environment so an operator can change them without re-enrolling.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

CONFIG_ENV = "BENCHREG_AGENT_CONFIG"


def default_path() -> Path:
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "benchreg" / "agent.json"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


@dataclass(frozen=True)
class Credential:
    """What an enrolled agent needs. `token` is the agent's own API token (scopes agent and submit)."""

    server: str
    token: str
    agent: str
    agent_id: int
    queue: str
    broker_url: str
    # Tuning (not stored: read from the environment each start).
    lease_seconds: int = 120
    heartbeat_seconds: int = 30
    visibility_timeout: int = 7200
    restore_interval: int = 60

    def stored(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("lease_seconds", "heartbeat_seconds", "visibility_timeout", "restore_interval"):
            data.pop(key)
        return data

    def with_environment(self) -> Credential:
        """Environment overrides: broker URL (as this machine reaches it) and timing knobs."""
        return replace(
            self,
            broker_url=os.environ.get("BENCHREG_AGENT_BROKER_URL") or self.broker_url,
            lease_seconds=_env_int("BENCHREG_AGENT_LEASE_SECONDS", self.lease_seconds),
            heartbeat_seconds=_env_int("BENCHREG_AGENT_HEARTBEAT_SECONDS", self.heartbeat_seconds),
            visibility_timeout=_env_int("BENCHREG_AGENT_VISIBILITY_TIMEOUT", self.visibility_timeout),
            restore_interval=_env_int("BENCHREG_AGENT_RESTORE_INTERVAL", self.restore_interval),
        )


def save(credential: Credential, path: Path) -> Path:
    """Write the credential file with mode 0600, atomically (temporary file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)  # O_CREAT's mode does not apply to a file that already existed
        json.dump(credential.stored(), fh, indent=2)
        fh.write("\n")
    tmp.replace(path)
    return path


def load(path: Path | None = None) -> Credential:
    """Read the credential file (default: $BENCHREG_AGENT_CONFIG or ~/.config/benchreg/agent.json)."""
    path = path or default_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no agent credential at {path}: run `benchreg agent enroll` first") from None
    fields = ("server", "token", "agent", "agent_id", "queue", "broker_url")
    missing = [name for name in fields if name not in data]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}: enrol again")
    return Credential(**{name: data[name] for name in fields}).with_environment()
