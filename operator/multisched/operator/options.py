"""Process-level options of the operator: command line, else environment, else defaults.

``multisched run`` fills them from its flags; under plain ``kopf run -m multisched.operator``
only the environment is available (``MULTISCHED_*``). Leader election is a property of the
process, as upstream keeps it at the top of the component config, never of a profile.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from multisched.config import parse_duration
from multisched.validation.names import is_dns1123_label, is_dns1123_subdomain

DEFAULT_PORT = 8080
#: kube-scheduler's secure port (``/metrics``, ``/configz``, ``/debug``; see secure.py).
DEFAULT_SECURE_PORT = 10259
#: Component name of events that belong to no profile (SchedulerProfile warnings).
COMPONENT = "multisched"
#: client-go's ``JitterFactor``: the renew deadline must exceed it times the retry period.
JITTER_FACTOR = 1.2
#: ``Lease.spec.leaseDurationSeconds`` is an int32 and must be positive.
MAX_LEASE_SECONDS = 2**31 - 1
#: Leases the control plane holds in kube-system: an elector taking one over would stop
#: kube-scheduler (or the controller managers) from leading. The chart refuses the same.
CONTROL_PLANE_LEASES = frozenset(
    {"kube-scheduler", "kube-controller-manager", "cloud-controller-manager"}
)
CONTROL_PLANE_LEASE_PREFIXES = ("apiserver-", "kube-apiserver-")
#: The kubelets' heartbeats: every Lease there is a node's.
NODE_LEASE_NAMESPACE = "kube-node-lease"


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Lease-based leader election settings (component-base LeaderElectionConfiguration)."""

    leader_elect: bool = False
    resource_namespace: str = "kube-system"
    resource_name: str = "multisched"
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0


def _flag(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _env_duration(env: Mapping[str, str], name: str) -> float | None:
    value = env.get(name)
    if not value:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _names(value: str | None) -> frozenset[str]:
    """A comma-separated list of names (empty items dropped)."""
    return frozenset(n.strip() for n in (value or "").split(",") if n.strip())


def is_control_plane_lease(namespace: str, name: str) -> bool:
    """Whether ``namespace/name`` is a Lease the control plane or a node holds."""
    if namespace == NODE_LEASE_NAMESPACE:
        return True
    return namespace == "kube-system" and (
        name in CONTROL_PLANE_LEASES or name.startswith(CONTROL_PLANE_LEASE_PREFIXES)
    )


def _seconds(value: float) -> str:
    return f"{value:g}s"


@dataclass(frozen=True, slots=True)
class Options:
    leader_elect: bool = False
    lease_namespace: str = "kube-system"
    lease_name: str = "multisched"
    #: Seconds.
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: Health and metrics server; port 0 disables it.
    http_host: str = "0.0.0.0"
    http_port: int = DEFAULT_PORT
    #: The secure port (TLS, TokenReview, SubjectAccessReview); port 0 disables it.
    secure_port: int = DEFAULT_SECURE_PORT
    bind_address: str = "0.0.0.0"
    #: Serving certificate and key (PEM); neither: a self-signed pair made at start.
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    #: The address the serving certificate names besides localhost (the pod's IP).
    advertise_address: str | None = None
    #: The Service in front of the secure port and its namespace: the self-signed
    #: certificate names it (``<svc>``, ``<svc>.<ns>``, ``<svc>.<ns>.svc[.cluster.local]``).
    service_name: str | None = None
    service_namespace: str | None = None
    kubeconfig: str | None = None
    #: Seconds between backoff/unschedulable flushes and status retries.
    housekeeping_seconds: float = 30.0
    #: Seconds between resending bindings whose response was lost (an API outage).
    lost_binding_retry_seconds: float = 2.0
    #: schedulerNames multisched must never serve (other schedulers' names): a profile
    #: claiming one is refused (Ready=False), whatever its other profiles.
    reserved_scheduler_names: frozenset[str] = frozenset({"default-scheduler"})
    #: Where the SchedulerProfiles' ControllerRevisions (history, rollback) are kept: the
    #: operator's own namespace in a cluster.
    revision_namespace: str = "default"
    #: Keep PodGroup and ElasticQuota status, as scheduler-plugins' controller does (off
    #: while that controller still runs).
    group_status: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Options:
        env = os.environ if env is None else env
        port = env.get("MULTISCHED_METRICS_PORT")
        secure_port = env.get("MULTISCHED_SECURE_PORT")
        defaults = cls()
        lease = _env_duration(env, "MULTISCHED_LEASE_DURATION")
        renew = _env_duration(env, "MULTISCHED_RENEW_DEADLINE")
        retry = _env_duration(env, "MULTISCHED_RETRY_PERIOD")
        reserved = env.get("MULTISCHED_RESERVED_SCHEDULER_NAMES")
        return cls(
            leader_elect=bool(_flag(env.get("MULTISCHED_LEADER_ELECT"))),
            lease_namespace=env.get("MULTISCHED_LEASE_NAMESPACE") or defaults.lease_namespace,
            lease_name=env.get("MULTISCHED_LEASE_NAME") or defaults.lease_name,
            lease_duration=defaults.lease_duration if lease is None else lease,
            renew_deadline=defaults.renew_deadline if renew is None else renew,
            retry_period=defaults.retry_period if retry is None else retry,
            http_port=int(port) if port else DEFAULT_PORT,
            secure_port=int(secure_port) if secure_port else DEFAULT_SECURE_PORT,
            tls_cert_file=env.get("MULTISCHED_TLS_CERT_FILE") or None,
            tls_private_key_file=env.get("MULTISCHED_TLS_PRIVATE_KEY_FILE") or None,
            advertise_address=env.get("POD_IP") or None,
            service_name=env.get("MULTISCHED_SERVICE_NAME") or None,
            service_namespace=env.get("POD_NAMESPACE") or None,
            kubeconfig=env.get("MULTISCHED_KUBECONFIG") or None,
            # Set, the variable is the list (an empty one is refused by check()).
            reserved_scheduler_names=defaults.reserved_scheduler_names
            if reserved is None
            else _names(reserved),
            group_status=_flag(env.get("MULTISCHED_GROUP_STATUS")) is not False,
            revision_namespace=env.get("MULTISCHED_REVISION_NAMESPACE")
            or env.get("POD_NAMESPACE")
            or defaults.revision_namespace,
        )

    def leader_election(self) -> LeaderElection:
        return LeaderElection(
            leader_elect=self.leader_elect,
            resource_namespace=self.lease_namespace,
            resource_name=self.lease_name,
            lease_duration_seconds=self.lease_duration,
            renew_deadline_seconds=self.renew_deadline,
            retry_period_seconds=self.retry_period,
        )

    def check(self) -> None:
        """Refuse leader-election settings that cannot work, as upstream does at start-up
        (component-base validation, client-go ``NewLeaderElector``, Lease validation), with
        one line naming the flag. Checked whether or not election is on, so turning it on
        later (a rollout to 2 replicas) cannot be the first time they are looked at."""
        lease, renew, retry = self.lease_duration, self.renew_deadline, self.retry_period
        for flag, value in (
            ("--leader-elect-lease-duration", lease),
            ("--leader-elect-renew-deadline", renew),
            ("--leader-elect-retry-period", retry),
        ):
            if value <= 0:
                raise ValueError(f"{flag}: {_seconds(value)} must be greater than zero")
        if lease < 1:
            raise ValueError(
                f"--leader-elect-lease-duration: {_seconds(lease)} is less than 1s "
                "(a Lease counts its duration in whole seconds)"
            )
        if lease > MAX_LEASE_SECONDS:
            raise ValueError(
                f"--leader-elect-lease-duration: {_seconds(lease)} is more than "
                f"{MAX_LEASE_SECONDS}s, the most a Lease's leaseDurationSeconds holds"
            )
        if renew >= lease:
            raise ValueError(
                f"--leader-elect-renew-deadline: {_seconds(renew)} must be less than "
                f"--leader-elect-lease-duration {_seconds(lease)}"
            )
        if renew <= JITTER_FACTOR * retry:
            raise ValueError(
                f"--leader-elect-retry-period: {_seconds(retry)} is too long for "
                f"--leader-elect-renew-deadline {_seconds(renew)} (the deadline must exceed "
                f"{JITTER_FACTOR} x the retry period)"
            )
        for flag, namespace in (
            ("--lease-namespace", self.lease_namespace),
            ("--revision-namespace", self.revision_namespace),
        ):
            if is_dns1123_label(namespace):
                raise ValueError(
                    f"{flag}: {namespace!r} is not a valid namespace name "
                    "(lower-case letters, digits and '-', at most 63 characters)"
                )
        self._check_serving()
        if is_dns1123_subdomain(self.lease_name):
            raise ValueError(
                f"--lease-name: {self.lease_name!r} is not a valid Lease name "
                "(a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253 "
                "characters)"
            )
        if is_control_plane_lease(self.lease_namespace, self.lease_name):
            raise ValueError(
                f"--lease-name: Lease {self.lease_namespace}/{self.lease_name} belongs to the "
                "control plane (kube-scheduler, kube-controller-manager, "
                "cloud-controller-manager, apiserver-* in kube-system; node heartbeats in "
                "kube-node-lease): multisched would take it over; choose another "
                "--lease-name or --lease-namespace"
            )
        if not self.reserved_scheduler_names:
            raise ValueError(
                "--reserved-scheduler-names is empty: that turns off the refusal of other "
                "schedulers' names; keep default-scheduler in it"
            )

    def _check_serving(self) -> None:
        for flag, port in (("--metrics-port", self.http_port), ("--secure-port", self.secure_port)):
            if not 0 <= port <= 65535:
                raise ValueError(f"{flag}: {port} is not a port number (0 to 65535; 0: off)")
        cert, key = self.tls_cert_file, self.tls_private_key_file
        if bool(cert) != bool(key):
            given, missing = (
                ("--tls-cert-file", "--tls-private-key-file")
                if cert
                else ("--tls-private-key-file", "--tls-cert-file")
            )
            raise ValueError(f"{given} needs {missing} too (or neither: a self-signed pair)")
        for flag, path in (("--tls-cert-file", cert), ("--tls-private-key-file", key)):
            if path and not os.access(path, os.R_OK):
                raise ValueError(f"{flag}: cannot read {path}")
        if cert and key:
            try:  # a pair that does not load would stop the start later, less plainly
                ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
            except (ssl.SSLError, OSError) as exc:
                reason = getattr(exc, "reason", None) or str(exc)
                raise ValueError(
                    f"--tls-cert-file: {cert} and {key} are not a PEM certificate and its "
                    f"key ({reason})"
                ) from None
