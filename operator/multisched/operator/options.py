"""Process-level options of the operator: command line, else environment, else defaults.

``multisched run`` fills them from its flags; under plain ``kopf run -m multisched.operator``
only the environment is available (``MULTISCHED_*``). Leader-election flags override the
``leaderElection`` of the SchedulerProfiles field by field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from multisched.config.resolved import LeaderElection

DEFAULT_PORT = 8080
#: Component name of events that belong to no profile (SchedulerProfile warnings).
COMPONENT = "multisched"


def _flag(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


@dataclass(frozen=True, slots=True)
class Options:
    #: None: not given, the SchedulerProfile's ``leaderElection`` decides.
    leader_elect: bool | None = None
    lease_namespace: str | None = None
    lease_name: str | None = None
    #: Seconds; None keeps the profile's (or the default) value.
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    #: Health and metrics server; port 0 disables it.
    http_host: str = "0.0.0.0"
    http_port: int = DEFAULT_PORT
    kubeconfig: str | None = None
    #: Seconds between backoff/unschedulable flushes and status retries.
    housekeeping_seconds: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Options:
        env = os.environ if env is None else env
        port = env.get("MULTISCHED_METRICS_PORT")
        return cls(
            leader_elect=_flag(env.get("MULTISCHED_LEADER_ELECT")),
            lease_namespace=env.get("MULTISCHED_LEASE_NAMESPACE") or None,
            lease_name=env.get("MULTISCHED_LEASE_NAME") or None,
            http_port=int(port) if port else DEFAULT_PORT,
            kubeconfig=env.get("MULTISCHED_KUBECONFIG") or None,
        )

    def leader_election(self, configured: LeaderElection) -> LeaderElection:
        """The profile's settings with the command line laid over them."""
        result = configured
        if self.leader_elect is not None:
            result = replace(result, leader_elect=self.leader_elect)
        if self.lease_namespace:
            result = replace(result, resource_namespace=self.lease_namespace)
        if self.lease_name:
            result = replace(result, resource_name=self.lease_name)
        if self.lease_duration is not None:
            result = replace(result, lease_duration_seconds=self.lease_duration)
        if self.renew_deadline is not None:
            result = replace(result, renew_deadline_seconds=self.renew_deadline)
        if self.retry_period is not None:
            result = replace(result, retry_period_seconds=self.retry_period)
        return result

    def check(self) -> None:
        """Reject timing flags that cannot work together (as the config room does)."""
        timing = self.leader_election(LeaderElection())
        lease, renew = timing.lease_duration_seconds, timing.renew_deadline_seconds
        retry = timing.retry_period_seconds
        if min(lease, renew, retry) <= 0:
            raise ValueError("leader election durations must be greater than zero")
        if renew >= lease:
            raise ValueError(f"renew deadline {renew}s must be less than lease duration {lease}s")
        if renew <= 1.2 * retry:
            raise ValueError(
                f"retry period {retry}s is too long for renew deadline {renew}s "
                "(the deadline must exceed 1.2 x the retry period)"
            )
