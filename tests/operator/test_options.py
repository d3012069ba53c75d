"""``multisched run``'s command line and environment: leader election is the process's, and
settings that cannot work are refused at start-up with one line naming the flag (exit 2)."""

from __future__ import annotations

import pytest

from multisched.operator.main import build_parser, options_from_args, run
from multisched.operator.options import MAX_LEASE_SECONDS, Options


def options(*argv: str) -> Options:
    return options_from_args(build_parser().parse_args(list(argv)), Options())


def test_the_chart_command_line() -> None:
    opts = options(
        "--all-namespaces",
        "--liveness",
        "http://0.0.0.0:8080/healthz",
        "--leader-elect=true",
        "--lease-namespace",
        "ops",
        "--lease-name",
        "multisched-a",
        "--leader-elect-lease-duration",
        "30s",
        "--leader-elect-renew-deadline",
        "20s",
        "--leader-elect-retry-period",
        "4s",
    )
    assert (opts.http_host, opts.http_port) == ("0.0.0.0", 8080)
    election = opts.leader_election()
    assert (election.leader_elect, election.resource_namespace, election.resource_name) == (
        True,
        "ops",
        "multisched-a",
    )
    assert (
        election.lease_duration_seconds,
        election.renew_deadline_seconds,
        election.retry_period_seconds,
    ) == (30, 20, 4)
    opts.check()


def test_defaults_are_upstreams() -> None:
    election = options().leader_election()
    assert not election.leader_elect
    assert (election.resource_namespace, election.resource_name) == ("kube-system", "multisched")
    assert (
        election.lease_duration_seconds,
        election.renew_deadline_seconds,
        election.retry_period_seconds,
    ) == (15, 10, 2)
    options().check()


def test_leader_elect_flag_forms() -> None:
    assert options("--leader-elect").leader_elect is True
    assert options("--leader-elect=false").leader_elect is False
    assert options().leader_elect is False


BAD = {
    # Upstream (component-base + client-go NewLeaderElector): all positive,
    # renewDeadline < leaseDuration, renewDeadline > 1.2 x retryPeriod.
    "renew not below lease": (
        ("--leader-elect-renew-deadline", "15s"),
        "--leader-elect-renew-deadline: 15s must be less than --leader-elect-lease-duration 15s",
    ),
    "retry too long": (
        ("--leader-elect-retry-period", "9s"),
        "--leader-elect-retry-period: 9s is too long for --leader-elect-renew-deadline 10s",
    ),
    "zero retry": (("--leader-elect-retry-period", "0s"), "must be greater than zero"),
    "negative lease": (("--leader-elect-lease-duration=-15s",), "must be greater than zero"),
    # The 3ns/2ns/1ns flapped 168 times in 20 s: the Lease counts whole seconds.
    "nanoseconds": (
        (
            "--leader-elect-lease-duration=3ns",
            "--leader-elect-renew-deadline=2ns",
            "--leader-elect-retry-period=1ns",
        ),
        "--leader-elect-lease-duration: 3e-09s is less than 1s",
    ),
    # leaseDurationSeconds is an int32.
    "beyond int32": (
        (
            "--leader-elect-lease-duration",
            f"{MAX_LEASE_SECONDS + 1}s",
            "--leader-elect-renew-deadline",
            "2000000000s",
        ),
        "the most a Lease's leaseDurationSeconds holds",
    ),
    "bad lease name": (("--lease-name", "Bad Name!"), "--lease-name: 'Bad Name!' is not a valid"),
    "empty lease name": (("--lease-name", ""), "--lease-name: '' is not a valid"),
    "bad namespace": (
        ("--lease-namespace", "Kube_System"),
        "--lease-namespace: 'Kube_System' is not a valid namespace name",
    ),
    "namespace too long": (("--lease-namespace", "n" * 64), "at most 63 characters"),
    # The control plane's Leases (the chart refuses the same): taking one over would stop
    # kube-scheduler or a controller manager from leading.
    "kube-scheduler's lease": (
        ("--lease-name", "kube-scheduler"),
        "--lease-name: Lease kube-system/kube-scheduler belongs to the control plane",
    ),
    "kube-controller-manager's lease": (
        ("--lease-name", "kube-controller-manager"),
        "Lease kube-system/kube-controller-manager belongs to the control plane",
    ),
    "cloud-controller-manager's lease": (
        ("--lease-name", "cloud-controller-manager"),
        "Lease kube-system/cloud-controller-manager belongs to the control plane",
    ),
    "an API server's identity lease": (
        ("--lease-name", "apiserver-abc123"),
        "Lease kube-system/apiserver-abc123 belongs to the control plane",
    ),
    "a kube-apiserver lease": (
        ("--lease-name", "kube-apiserver-x"),
        "Lease kube-system/kube-apiserver-x belongs to the control plane",
    ),
    "a node's heartbeat": (
        ("--lease-namespace", "kube-node-lease", "--lease-name", "multisched"),
        "Lease kube-node-lease/multisched belongs to the control plane",
    ),
    "empty reserved names": (
        ("--reserved-scheduler-names", " , "),
        "--reserved-scheduler-names is empty: that turns off the refusal",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_unworkable_settings_are_refused(case: str) -> None:
    flags, expected = BAD[case]
    with pytest.raises(ValueError) as info:
        options(*flags).check()
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "case",
    [
        "renew not below lease",
        "bad lease name",
        "nanoseconds",
        "kube-scheduler's lease",
        "a node's heartbeat",
        "empty reserved names",
    ],
)
def test_run_exits_2_with_one_line(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    flags, expected = BAD[case]
    assert run(["--leader-elect", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and expected in err


def test_durations_beyond_go_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    # The 99999999999h: Go's time.ParseDuration overflows; argparse exits 2.
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--leader-elect-lease-duration", "99999999999h"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of range" in err


def test_environment_options() -> None:
    opts = Options.from_env(
        {
            "MULTISCHED_LEADER_ELECT": "true",
            "MULTISCHED_LEASE_NAMESPACE": "ns",
            "MULTISCHED_LEASE_DURATION": "20s",
            "MULTISCHED_METRICS_PORT": "0",
        }
    )
    assert (opts.leader_elect, opts.lease_namespace, opts.http_port) == (True, "ns", 0)
    assert (opts.lease_duration, opts.renew_deadline) == (20, 10)
    with pytest.raises(ValueError, match="not a boolean"):
        Options.from_env({"MULTISCHED_LEADER_ELECT": "maybe"})
    with pytest.raises(ValueError, match="MULTISCHED_RETRY_PERIOD: invalid duration"):
        Options.from_env({"MULTISCHED_RETRY_PERIOD": "2"})
    # Flags win over the environment.
    args = build_parser().parse_args(["--lease-name", "flag"])
    assert options_from_args(
        args, Options.from_env({"MULTISCHED_LEASE_NAME": "env"})
    ).lease_name == ("flag")


def test_reserved_scheduler_names_default_to_kube_schedulers_and_can_be_listed() -> None:
    assert Options().reserved_scheduler_names == frozenset({"default-scheduler"})
    opts = options("--reserved-scheduler-names", "default-scheduler, volcano,,yunikorn")
    assert opts.reserved_scheduler_names == frozenset({"default-scheduler", "volcano", "yunikorn"})
    env = Options.from_env({"MULTISCHED_RESERVED_SCHEDULER_NAMES": "a,b"})
    assert env.reserved_scheduler_names == frozenset({"a", "b"})


def test_control_plane_lease_names_elsewhere_are_the_operators_own() -> None:
    """Only kube-system's control-plane names (and all of kube-node-lease) are refused: the
    same names in the operator's own namespace, and look-alikes in kube-system, are not."""
    for flags in (
        ("--lease-namespace", "ops", "--lease-name", "kube-scheduler"),
        ("--lease-name", "kube-scheduler-extra"),
        ("--lease-name", "my-apiserver-lock"),
    ):
        options(*flags).check()


def test_an_empty_reserved_names_variable_is_refused_unset_is_the_default() -> None:
    assert Options.from_env({}).reserved_scheduler_names == frozenset({"default-scheduler"})
    empty = Options.from_env({"MULTISCHED_RESERVED_SCHEDULER_NAMES": ""})
    with pytest.raises(ValueError, match="--reserved-scheduler-names is empty"):
        empty.check()


def test_run_leaves_a_python_stack_on_a_crash_below_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """faulthandler is on before the loop starts: an abort in a C extension (a segfault, a
    library's abort()) still prints every thread's stack."""
    import asyncio
    import faulthandler

    class NoRunner:
        def __init__(self, **_: object) -> None:
            raise RuntimeError("no loop in this test")

    was_enabled = faulthandler.is_enabled()  # pytest's own plugin may have it on
    faulthandler.disable()
    monkeypatch.setattr(asyncio, "Runner", NoRunner)
    try:
        assert run(["--leader-elect=false"]) == 1  # stopped where the loop would start
        assert faulthandler.is_enabled()
    finally:
        if not was_enabled:
            faulthandler.disable()


def test_run_runs_the_operator_on_asyncios_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not uvloop, even when installed: with aiohttp it aborts the process when connections
    are cancelled while the API server restarts (a client cancelling TLS requests to a server
    killed and restarted every second aborted under uvloop 0.23 in 4 runs of 4, within 30 s;
    on asyncio's loop it ran on)."""
    import asyncio
    import faulthandler

    import kopf

    loops: list[str] = []

    async def operator(**_: object) -> None:
        loops.append(type(asyncio.get_running_loop()).__module__)

    was_enabled = faulthandler.is_enabled()
    monkeypatch.setattr(kopf, "operator", operator)
    try:
        assert run(["--leader-elect=false"]) == 0
    finally:
        if not was_enabled:
            faulthandler.disable()
    assert len(loops) == 1 and loops[0].startswith("asyncio."), loops
