"""PodInfo request math after upstream resourcehelper.PodRequests / GetNonzeroRequests."""

import pytest

from builders import make_pod, pod_dict
from multisched.cache import PodError, PodInfo
from multisched.cache.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST


def _pod(containers: list[dict], init: list[dict] | None = None, **spec: object) -> PodInfo:
    return PodInfo.parse(
        {
            "metadata": {"name": "p"},
            "spec": {"containers": containers, "initContainers": init or [], **spec},
        }
    )


def _c(cpu: str | None = None, mem: str | None = None, **extra: object) -> dict:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    return {"name": "c", "resources": {"requests": req}, **extra}


def test_containers_sum() -> None:
    pod = _pod([_c("100m", "1Gi"), _c("250m", "512Mi")])
    assert pod.requests.milli_cpu == 350
    assert pod.requests.memory == 1536 * 2**20


def test_init_container_max_rule() -> None:
    pod = _pod([_c("1", "1Gi")], init=[_c("2", "512Mi"), _c("500m", "3Gi")])
    assert pod.requests.milli_cpu == 2000
    assert pod.requests.memory == 3 * 2**30


def test_sidecar_runs_alongside() -> None:
    # A restartable init container adds to the app's requests and to later init containers.
    sidecar = _c("500m", "1Gi", restartPolicy="Always")
    pod = _pod([_c("1", "1Gi")], init=[sidecar, _c("1", "1Gi")])
    assert pod.requests.milli_cpu == 1500
    assert pod.requests.memory == 2 * 2**30


def test_overhead_added() -> None:
    pod = _pod([_c("1", "1Gi")], overhead={"cpu": "250m", "memory": "120Mi"})
    assert pod.requests.milli_cpu == 1250
    assert pod.requests.memory == 2**30 + 120 * 2**20


def test_non_zero_defaults_only_when_unset() -> None:
    unset = _pod([{"name": "c"}])
    assert (unset.non_zero_cpu, unset.non_zero_memory) == (
        DEFAULT_MILLI_CPU_REQUEST,
        DEFAULT_MEMORY_REQUEST,
    )
    assert (unset.requests.milli_cpu, unset.requests.memory) == (0, 0)
    explicit_zero = _pod([_c("0", "0")])
    assert (explicit_zero.non_zero_cpu, explicit_zero.non_zero_memory) == (0, 0)


def test_limits_default_requests() -> None:
    pod = _pod([{"name": "c", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}])
    assert pod.requests.milli_cpu == 2000
    assert pod.requests.scalar == {"nvidia.com/gpu": 1}
    # Scoring reads the defaulted request too; memory, set nowhere, counts as 200Mi.
    assert (pod.non_zero_cpu, pod.non_zero_memory) == (2000, DEFAULT_MEMORY_REQUEST)


def test_scheduler_name_defaults_and_ports() -> None:
    pod = make_pod(host_ports=[8080])
    assert pod.scheduler_name == "default-scheduler"
    assert pod.host_ports == (("0.0.0.0", "TCP", 8080),)


def test_odd_pod_gets_a_clear_error() -> None:
    with pytest.raises(
        PodError,
        match=r"pod default/p: spec.containers\[0\].resources: cpu: invalid quantity 'lots'",
    ):
        PodInfo.parse(pod_dict("p", requests={"cpu": "lots"}))
    bad_selector = pod_dict(
        "p",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "k", "operator": "Near", "values": ["x"]}]}
                    ]
                }
            }
        },
    )
    with pytest.raises(PodError, match="unknown operator 'Near'"):
        PodInfo.parse(bad_selector)


@pytest.mark.parametrize(
    "requests",
    [
        {},
        {"cpu": "250m"},
        {"memory": "1Gi", "ephemeral-storage": "2Gi"},
        {"cpu": "1", "memory": "64Mi", "example.com/gpu": "2"},
        {"cpu": "0", "memory": "0"},
    ],
)
def test_one_container_fast_path_equals_the_general_rule(requests: dict[str, str]) -> None:
    """A pod of one container takes a shortcut; an init container requesting nothing makes
    the general rule (max of app and init phases) run on the same requests."""
    container = {"name": "c", "image": "i", "resources": {"requests": requests}}
    idle_init = {
        "name": "init",
        "image": "i",
        "resources": {"requests": {"cpu": "0", "memory": "0"}},
    }
    fast = PodInfo.parse({"metadata": {"name": "a"}, "spec": {"containers": [container]}})
    general = PodInfo.parse(
        {
            "metadata": {"name": "b"},
            "spec": {"containers": [container], "initContainers": [idle_init]},
        }
    )
    assert fast.requests == general.requests
    assert (fast.non_zero_cpu, fast.non_zero_memory) == (
        general.non_zero_cpu,
        general.non_zero_memory,
    )
