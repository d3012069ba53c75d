"""A pod's requests as kube-scheduler v1.37 counts them: pod-level resources (PodLevelResources,
on by default) and in-place resize (InPlacePodVerticalScaling, GA): max(spec, actuated,
allocated), and (actuated, allocated) while the resize is infeasible.

Cases from upstream v1.37.2 ``pkg/scheduler/framework/types_test.go``
(TestCalculatePodResourcesWithResize) and ``component-helpers/resource/helpers_test.go``
(TestPodLevelResourceRequests); the last two are the issue's simulate runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from multisched.cache import PodError, PodInfo

M = 1000 * 1000  # "500M" is decimal


def rl(cpu: str, mem: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": mem}


def resize_pod(
    requests: dict[str, str],
    status_resources: dict[str, str],
    *,
    pod_level: dict[str, str] | None = None,
    pod_level_status: dict[str, str] | None = None,
    init: tuple[dict[str, str], dict[str, str]] | None = None,
    sidecar: tuple[dict[str, str], dict[str, str]] | None = None,
    conditions: list[dict[str, str]] | None = None,
) -> PodInfo:
    """upstream's ``preparePodInfo``: one app container c1, optionally an init container i1
    and a sidecar s1, each with its spec requests and its status' actuated requests."""
    spec: dict[str, Any] = {"containers": [{"name": "c1", "resources": {"requests": requests}}]}
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [{"name": "c1", "resources": {"requests": status_resources}}],
        "conditions": conditions or [],
    }
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    if pod_level_status is not None:
        status["resources"] = {"requests": pod_level_status}
    inits, init_statuses = [], []
    for name, pair, extra in (("i1", init, {}), ("s1", sidecar, {"restartPolicy": "Always"})):
        if pair is not None:
            inits.append({"name": name, "resources": {"requests": pair[0]}, **extra})
            init_statuses.append({"name": name, "resources": {"requests": pair[1]}})
    if inits:
        spec["initContainers"] = inits
        status["initContainerStatuses"] = init_statuses
    meta = {"name": "testpod", "namespace": "pod_resize_test", "uid": "testpod"}
    return PodInfo.parse({"metadata": meta, "spec": spec, "status": status})


IN_PROGRESS = [{"type": "PodResizeInProgress", "status": "True"}]
DEFERRED = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]


@pytest.mark.parametrize(
    ("pod", "cpu", "mem"),
    [
        pytest.param(
            resize_pod(rl("500m", "500M"), rl("500m", "500M")), 500, 500 * M, id="no resize"
        ),
        pytest.param(
            resize_pod(
                rl("500m", "500M"),
                rl("700m", "500M"),
                pod_level=rl("700m", "500M"),
                pod_level_status=rl("500m", "500M"),
            ),
            700,
            500 * M,
            id="pod-level, no resize",
        ),
        pytest.param(
            resize_pod(rl("500m", "500M"), rl("500m", "500M"), conditions=IN_PROGRESS),
            500,
            500 * M,
            id="resize in progress",
        ),
        pytest.param(
            resize_pod(
                rl("500m", "500M"),
                rl("700m", "500M"),
                pod_level=rl("700m", "500M"),
                pod_level_status=rl("500m", "500M"),
                conditions=IN_PROGRESS,
            ),
            700,
            500 * M,
            id="pod-level, resize in progress",
        ),
        pytest.param(
            resize_pod(rl("700m", "800M"), rl("500m", "500M"), conditions=DEFERRED),
            700,
            800 * M,
            id="deferred resize: the spec's larger ask counts",
        ),
        pytest.param(
            resize_pod(
                rl("500m", "500M"),
                rl("500m", "500M"),
                pod_level=rl("700m", "800M"),
                pod_level_status=rl("500m", "500M"),
                conditions=DEFERRED,
            ),
            700,
            800 * M,
            id="pod-level, deferred resize",
        ),
        pytest.param(
            resize_pod(rl("700m", "800M"), rl("500m", "500M"), conditions=INFEASIBLE),
            500,
            500 * M,
            id="infeasible resize: what runs counts, not the spec",
        ),
        pytest.param(
            resize_pod(
                rl("500m", "500M"),
                rl("500m", "500M"),
                init=(rl("700m", "800M"), rl("700m", "800M")),
            ),
            700,
            800 * M,
            id="init container, no resize",
        ),
        pytest.param(
            resize_pod(
                rl("500m", "500M"),
                rl("500m", "500M"),
                init=(rl("700m", "800M"), rl("700m", "800M")),
                sidecar=(rl("700m", "800M"), rl("700m", "800M")),
            ),
            1200,
            1300 * M,
            id="sidecar, no resize",
        ),
    ],
)
def test_calculate_pod_resources_with_resize(pod: PodInfo, cpu: int, mem: int) -> None:
    assert (pod.requests.milli_cpu, pod.requests.memory) == (cpu, mem)
    assert (pod.non_zero_cpu, pod.non_zero_memory) == (cpu, mem)


def test_a_resize_counts_the_max_of_spec_actuated_and_allocated() -> None:
    # The case: spec 1 CPU, the kubelet allocated and actuated 3.
    pod = PodInfo.parse(
        {
            "metadata": {"name": "resized"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {
                "containerStatuses": [
                    {
                        "name": "c",
                        "allocatedResources": {"cpu": "3"},
                        "resources": {"requests": {"cpu": "3"}},
                    }
                ]
            },
        }
    )
    assert pod.requests.milli_cpu == 3000
    # Allocated alone (no actuated yet) counts too.
    only_allocated = PodInfo.parse(
        {
            "metadata": {"name": "allocated"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "2"}}]},
        }
    )
    assert only_allocated.requests.milli_cpu == 2000


def test_pod_level_status_totals_stand_for_the_containers() -> None:
    """With both pod-level status maps, the kubelet's totals are the actuated and allocated
    views (no per-container defaults for what they leave out)."""
    pod = PodInfo.parse(
        {
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {
                "allocatedResources": {"cpu": "2", "memory": "1Gi"},
                "resources": {"requests": {"cpu": "1500m"}},
                "containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "9"}}}],
            },
        }
    )
    assert (pod.requests.milli_cpu, pod.requests.memory) == (2000, 2**30)


def pod_with(resources: dict[str, Any], *containers: dict[str, Any]) -> PodInfo:
    spec: dict[str, Any] = {"containers": list(containers) or [{"name": "c"}]}
    if resources:
        spec["resources"] = resources
    return PodInfo.parse({"metadata": {"name": "p"}, "spec": spec})


def container(**requests: str) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests}}


@pytest.mark.parametrize(
    ("resources", "containers", "expected"),
    [
        ({}, (), {"cpu": 0, "memory": 0}),
        ({"requests": {"memory": "2Mi"}}, (), {"memory": 2 * 2**20}),
        (
            {"requests": {"memory": "2Mi"}},
            (container(cpu="2m"),),
            {"memory": 2 * 2**20, "cpu": 2},
        ),
        # Unsupported at pod level: the containers' own requests stand.
        (
            {"requests": {"ephemeral-storage": "2Mi"}},
            (container(**{"ephemeral-storage": "3Mi"}),),
            {"ephemeral-storage": 3 * 2**20},
        ),
        (
            {"requests": {"ephemeral-storage": "2Mi"}},
            (container(memory="3Mi"),),
            {"memory": 3 * 2**20, "ephemeral-storage": 0},
        ),
        (
            {"requests": {"cpu": "3", "memory": "1Gi"}},
            (container(cpu="1", memory="100Mi"), container(cpu="1")),
            {"cpu": 3000, "memory": 2**30},
        ),
    ],
)
def test_pod_level_resource_requests(
    resources: dict[str, Any], containers: tuple[dict[str, Any], ...], expected: dict[str, int]
) -> None:
    pod = pod_with(resources, *containers)
    assert {name: pod.requests.get(name) for name in expected} == expected


def test_pod_level_limits_default_the_requests_as_the_api_server_does() -> None:
    # No pod-level request: the containers' aggregate where they ask, else the limit.
    pod = pod_with({"limits": {"cpu": "4", "memory": "2Gi"}}, container(cpu="1500m"))
    assert (pod.requests.milli_cpu, pod.requests.memory) == (1500, 2 * 2**30)


def test_non_zero_defaults_with_pod_level_requests() -> None:
    """NodeInfo's rule: with pod-level requests, 100m / 200Mi fill in only a resource that
    neither the pod nor a container requests."""
    cpu_only = pod_with({"requests": {"cpu": "2"}}, {"name": "a"}, {"name": "b"})
    assert (cpu_only.non_zero_cpu, cpu_only.non_zero_memory) == (2000, 2 * 200 * 2**20)
    both = pod_with({"requests": {"cpu": "2", "memory": "1Gi"}}, {"name": "a"})
    assert (both.non_zero_cpu, both.non_zero_memory) == (2000, 2**30)
    container_memory = pod_with({"requests": {"cpu": "2"}}, container(memory="64Mi"), {"name": "b"})
    assert container_memory.non_zero_memory == 64 * 2**20


def test_a_bad_pod_level_quantity_names_its_field() -> None:
    with pytest.raises(PodError, match=r"spec\.resources\.requests\.cpu"):
        pod_with({"requests": {"cpu": "lots"}})


# -- as a user sees it: multisched simulate ----------------------------------------------

PROFILE = """\
apiVersion: multisched.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: mine}
spec: {profiles: [{schedulerName: my-scheduler}]}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def simulate(tmp_path: Any, capsys: pytest.CaptureFixture[str], docs: str) -> dict[str, Any]:
    import json

    from multisched.cli import main

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(PROFILE + docs)
    assert main(["simulate", str(cluster), "-o", "json"]) == 0
    return {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def test_simulate_counts_pod_level_requests(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: my-scheduler
  resources: {{requests: {{cpu: "3"}}}}
  containers: [{{name: c, image: busybox}}]
"""
        for name in ("a", "b")
    )
    pods = simulate(tmp_path, capsys, docs)
    assert pods["default/a"]["node"] == "n1"
    assert pods["default/b"]["node"] is None
    assert "1 Insufficient cpu" in pods["default/b"]["message"]


def test_simulate_counts_a_resized_running_pod(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = """---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default}
spec:
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
status:
  phase: Running
  containerStatuses:
  - {name: c, image: busybox, imageID: "", ready: true, restartCount: 0,
     allocatedResources: {cpu: "3"}, resources: {requests: {cpu: "3"}}}
---
apiVersion: v1
kind: Pod
metadata: {name: new, namespace: default}
spec:
  schedulerName: my-scheduler
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
"""
    pods = simulate(tmp_path, capsys, docs)
    assert pods["default/new"]["node"] is None
    assert "1 Insufficient cpu" in pods["default/new"]["message"]
