"""The multisched Helm chart: lint, schema-valid output, least-privilege RBAC, HA switches."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from chart_support import CHART, NAMESPACE, HelmError, Manifest, by_kind
from multisched.operator.main import build_parser, options_from_args
from multisched.operator.options import Options

Render = Callable[..., list[Manifest]]
VALUE_SETS = {
    "defaults": (),
    "ha+monitoring": ("replicas=2", "serviceMonitor.enabled=true"),
    "scheduler-plugins-crds": (
        "schedulerPlugins.installCRDs=true",
        "schedulerPlugins.statusControllers=false",
    ),
}
KUBE_VERSIONS = ("1.35.0", latest_version())
FULLNAME = "multisched"  # release "multisched" contains the chart name
BASE_ARGS = [
    "run", "--all-namespaces", "--liveness", "http://0.0.0.0:8080/healthz",
    "--secure-port=10259", "--bind-address=0.0.0.0",
    "--reserved-scheduler-names=default-scheduler",
]  # fmt: skip
#: Leader election's flags as the chart's defaults render them (on, as kube-scheduler's).
LEADER_ARGS = [
    "--leader-elect=true", "--lease-namespace", NAMESPACE, "--lease-name", FULLNAME,
    "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s",
    "--leader-elect-retry-period=2s",
]  # fmt: skip


def _only(docs: list[Manifest], kind: str) -> Manifest:
    (doc,) = by_kind(docs, kind)
    return doc


def _container(docs: list[Manifest]) -> dict[str, Any]:
    (container,) = _only(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize("sets", VALUE_SETS.values(), ids=list(VALUE_SETS))
def test_helm_lint_strict(helm: str, sets: tuple[str, ...]) -> None:
    cmd = [helm, "lint", "--strict", str(CHART)]
    for item in sets:
        cmd += ["--set", item]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("sets", VALUE_SETS.values(), ids=list(VALUE_SETS))
def test_rendered_manifests_are_valid(
    render: Render,
    profile_errors: Callable[[Manifest], list[str]],
    sets: tuple[str, ...],
    kube_version: str,
) -> None:
    docs = render(*sets, kube_version=kube_version)
    custom = {"SchedulerProfile", "ServiceMonitor"}
    for doc in docs:
        if doc["kind"] == "SchedulerProfile":
            assert profile_errors(doc) == []
        elif doc["kind"] == "ServiceMonitor":
            assert doc["apiVersion"] == "monitoring.coreos.com/v1"
            (endpoint,) = doc["spec"]["endpoints"]
            assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == (
                "https",
                "https",
                "/metrics",
            )
            assert doc["spec"]["selector"]["matchLabels"] == _selector(docs)
        else:
            kubernetes_validate.validate(doc, kube_version, strict=True)
    assert {d["kind"] for d in docs} - custom >= {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service",
    }  # fmt: skip


def _selector(docs: list[Manifest]) -> dict[str, str]:
    selector: dict[str, str] = _only(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    return selector


def test_kube_version_floor_is_1_35(render: Render) -> None:
    with pytest.raises(HelmError, match="kubeVersion"):
        render(kube_version="1.34.9")


def test_values_schema_refuses_unknown_keys(render: Render) -> None:
    with pytest.raises(HelmError, match="additional properties"):
        render("replicaCount=2")
    with pytest.raises(HelmError):
        render("replicas=0")


def test_default_profile_is_my_scheduler(render: Render) -> None:
    (profile,) = by_kind(render(), "SchedulerProfile")
    assert profile["metadata"]["name"] == "my-scheduler"
    assert "namespace" not in profile["metadata"]  # cluster-scoped
    assert profile["spec"] == {"profiles": [{"schedulerName": "my-scheduler"}]}


def test_profiles_come_from_values(
    render: Render, profile_errors: Callable[[Manifest], list[str]]
) -> None:
    docs = render(
        "profiles[0].name=bin-packing",
        "profiles[0].spec.profiles[0].schedulerName=bin-packing-scheduler",
        "profiles[0].spec.profiles[0].pluginConfig[0].name=NodeResourcesFit",
        "profiles[0].spec.profiles[0].pluginConfig[0].args.scoringStrategy.type=MostAllocated",
        "profiles[1].name=plain",
        "profiles[1].spec.profiles[0].schedulerName=plain",
    )
    profiles = by_kind(docs, "SchedulerProfile")
    assert [p["metadata"]["name"] for p in profiles] == ["bin-packing", "plain"]
    for profile in profiles:
        assert profile_errors(profile) == []
    assert by_kind(render("profiles=null"), "SchedulerProfile") == []


# --- RBAC -------------------------------------------------------------------------------

CLUSTER_RULES = {
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "events"): {"create", "patch"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "namespaces"): {"get", "list", "watch"},
    ("policy", "poddisruptionbudgets"): {"get", "list", "watch"},
    ("", "persistentvolumes"): {"get", "list", "watch", "update"},
    ("", "persistentvolumeclaims"): {"get", "list", "watch", "update"},
    ("storage.k8s.io", "storageclasses"): {"get", "list", "watch"},
    ("storage.k8s.io", "csinodes"): {"get", "list", "watch"},
    ("storage.k8s.io", "csidrivers"): {"get", "list", "watch"},
    ("storage.k8s.io", "csistoragecapacities"): {"get", "list", "watch"},
    ("storage.k8s.io", "volumeattachments"): {"get", "list", "watch"},
    # DynamicResources: system:kube-scheduler v1.37.2's DRA rules (policy.go, default gates:
    # DRAExtendedResource, DRADeviceTaintRules, DRAResourceClaimGranularStatusAuthorization).
    ("resource.k8s.io", "deviceclasses"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceslices"): {"get", "list", "watch"},
    ("resource.k8s.io", "devicetaintrules"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceclaims"): {
        "get",
        "list",
        "watch",
        "update",
        "patch",
        "create",
        "delete",
    },
    ("resource.k8s.io", "resourceclaims/status"): {"get", "list", "watch", "update", "patch"},
    ("resource.k8s.io", "resourceclaims/binding"): {"update", "patch"},
    ("", "pods/finalizers"): {"update"},
    ("", "services"): {"get", "list", "watch"},
    ("", "replicationcontrollers"): {"get", "list", "watch"},
    ("apps", "replicasets"): {"get", "list", "watch"},
    ("apps", "statefulsets"): {"get", "list", "watch"},
    ("multisched.dev", "schedulerprofiles"): {"get", "list", "watch"},
    ("multisched.dev", "schedulerprofiles/status"): {"patch"},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
    # Coscheduling and CapacityScheduling read scheduler-plugins' objects and keep their status.
    ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch"},
    ("scheduling.x-k8s.io", "elasticquotas"): {"get", "list", "watch"},
    ("scheduling.x-k8s.io", "podgroups/status"): {"patch"},
    ("scheduling.x-k8s.io", "elasticquotas/status"): {"patch"},
    # The secure port's delegated authentication and authorization (as kube-scheduler).
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}


def lease_rules(name: str) -> list[dict[str, Any]]:
    """create alone (RBAC cannot name what does not exist yet), get/update on our Lease only."""
    return [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [name],
            "verbs": ["get", "update"],
        },
    ]


def _grants(role: Manifest) -> dict[tuple[str, str], set[str]]:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, "no resourceNames/nonResourceURLs"
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {field}: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


@pytest.mark.parametrize("replicas", [1, 3])
def test_cluster_role_is_exactly_least_privilege(render: Render, replicas: int) -> None:
    docs = render(f"replicas={replicas}")
    role = _exactly(docs, "ClusterRole", FULLNAME)
    assert _grants(role) == CLUSTER_RULES
    binding = _exactly(docs, "ClusterRoleBinding", FULLNAME)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    account = _only(docs, "ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": NAMESPACE}
    ]


def _named(docs: list[Manifest], kind: str, suffix: str) -> Manifest:
    (doc,) = [d for d in by_kind(docs, kind) if d["metadata"]["name"].endswith(suffix)]
    return doc


def _exactly(docs: list[Manifest], kind: str, name: str) -> Manifest:
    (doc,) = [d for d in by_kind(docs, kind) if d["metadata"]["name"] == name]
    return doc


def test_leases_are_granted_only_in_the_release_namespace(render: Render) -> None:
    docs = render("replicas=2")
    role = _named(docs, "Role", "-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == lease_rules(FULLNAME)
    binding = _named(docs, "RoleBinding", "-leader-election")
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["roleRef"]["kind"] == "Role"


def test_profile_history_is_kept_only_in_the_release_namespace(render: Render) -> None:
    docs = render()
    role = _named(docs, "Role", "-profile-history")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert _grants(role) == {("apps", "controllerrevisions"): {"create", "list", "patch", "delete"}}
    binding = _named(docs, "RoleBinding", "-profile-history")
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    account = _only(docs, "ServiceAccount")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    ]


# --- replicas and leader election ---------------------------------------------------------


def test_single_replica_elects_a_leader_by_default_and_has_no_pdb(render: Render) -> None:
    docs = render()
    deployment = _only(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert _container(docs)["args"] == BASE_ARGS + LEADER_ARGS
    # The Lease guards a rolling update: the new pod waits for the old one's lease.
    assert "strategy" not in deployment["spec"]
    assert _named(docs, "Role", "-leader-election")["rules"] == lease_rules(FULLNAME)
    assert "topologySpreadConstraints" not in deployment["spec"]["template"]["spec"]
    assert by_kind(docs, "PodDisruptionBudget") == []
    assert by_kind(docs, "ServiceMonitor") == []


def test_single_replica_without_leader_election_is_recreated(render: Render) -> None:
    docs = render("leaderElection.enabled=false")
    deployment = _only(docs, "Deployment")
    # No Lease: a rolling update must not run a second scheduler beside the first.
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    leases = [
        r for r in by_kind(docs, "Role") if r["metadata"]["name"].endswith("-leader-election")
    ]
    assert leases == []
    assert _container(docs)["args"] == BASE_ARGS
    # null: on with several replicas only (the former default).
    assert _container(render("leaderElection.enabled=null"))["args"] == BASE_ARGS


def _template(helm: str, namespace: str, *sets: str) -> subprocess.CompletedProcess[str]:
    cmd = [helm, "template", "multisched", str(CHART), "-n", namespace]
    for item in sets:
        cmd += ["--set", item]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("namespace", "lease"),
    [
        ("kube-system", "kube-scheduler"),
        ("kube-system", "kube-controller-manager"),
        ("kube-system", "cloud-controller-manager"),
        ("kube-system", "apiserver-a3xkqmjxq4tqkkqbqt4rsqzgpe"),
        ("kube-system", "kube-apiserver-1a2b3c"),
        ("kube-node-lease", "node-1"),
    ],
)
def test_a_control_plane_lease_is_refused(helm: str, namespace: str, lease: str) -> None:
    refusal = f"leaderElection.leaseName: Lease {namespace}/{lease} belongs to the control plane"
    named = _template(helm, namespace, f"leaderElection.leaseName={lease}")
    assert named.returncode == 1 and refusal in named.stderr
    # The release's full name alone may make the default Lease one of them.
    assert refusal in _template(helm, namespace, f"fullnameOverride={lease}").stderr
    # Elsewhere the name is anyone's; without leader election there is no Lease at all.
    assert _template(helm, NAMESPACE, f"leaderElection.leaseName={lease}").returncode == 0
    off = _template(
        helm, namespace, f"leaderElection.leaseName={lease}", "leaderElection.enabled=false"
    )
    assert off.returncode == 0, off.stderr


def test_in_kube_system_the_lease_is_its_own(helm: str) -> None:
    out = _template(helm, "kube-system")
    assert out.returncode == 0, out.stderr
    args = _container([d for d in yaml.safe_load_all(out.stdout) if d])["args"]
    lease = args.index("--lease-namespace")
    assert args[lease : lease + 4] == ["--lease-namespace", "kube-system", "--lease-name", FULLNAME]


def test_a_scheduler_is_system_cluster_critical_by_default(render: Render) -> None:
    pod = _only(render(), "Deployment")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    pod = _only(render("priorityClassName="), "Deployment")["spec"]["template"]["spec"]
    assert "priorityClassName" not in pod


def test_several_replicas_elect_a_leader_and_keep_one_up(render: Render) -> None:
    docs = render("replicas=2")
    assert _only(docs, "Deployment")["spec"]["replicas"] == 2
    args = _container(docs)["args"]
    assert args[: len(BASE_ARGS)] == BASE_ARGS
    assert args[len(BASE_ARGS) :] == [
        "--leader-elect=true",
        "--lease-namespace",
        NAMESPACE,
        "--lease-name",
        FULLNAME,
        "--leader-elect-lease-duration=15s",
        "--leader-elect-renew-deadline=10s",
        "--leader-elect-retry-period=2s",
    ]
    assert "strategy" not in _only(docs, "Deployment")["spec"]  # rolling: the Lease guards
    pdb = _only(docs, "PodDisruptionBudget")
    assert pdb["spec"] == {"minAvailable": 1, "selector": {"matchLabels": _selector(docs)}}


def test_replicas_are_spread_over_nodes_and_zones(render: Render) -> None:
    docs = render("replicas=3")
    spread = _only(docs, "Deployment")["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert [(c["topologyKey"], c["whenUnsatisfiable"], c["maxSkew"]) for c in spread] == [
        ("kubernetes.io/hostname", "ScheduleAnyway", 1),
        ("topology.kubernetes.io/zone", "ScheduleAnyway", 1),
    ]
    for constraint in spread:
        assert constraint["labelSelector"] == {"matchLabels": _selector(docs)}
        assert constraint["matchLabelKeys"] == ["pod-template-hash"]
    own = render(
        "replicas=3",
        "topologySpreadConstraints[0].maxSkew=1",
        "topologySpreadConstraints[0].topologyKey=rack",
        "topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
    )
    (constraint,) = _only(own, "Deployment")["spec"]["template"]["spec"][
        "topologySpreadConstraints"
    ]
    assert constraint["topologyKey"] == "rack"


def test_leader_election_values(render: Render) -> None:
    docs = render(
        "leaderElection.enabled=true",
        "leaderElection.leaseName=sched-lock",
        "leaderElection.leaseDuration=30s",
        "leaderElection.renewDeadline=20s",
        "leaderElection.retryPeriod=4s",
    )
    args = _container(docs)["args"]
    assert args[len(BASE_ARGS) :] == [
        "--leader-elect=true",
        "--lease-namespace",
        NAMESPACE,
        "--lease-name",
        "sched-lock",
        "--leader-elect-lease-duration=30s",
        "--leader-elect-renew-deadline=20s",
        "--leader-elect-retry-period=4s",
    ]
    # One replica with a Lease: rolling updates are safe, no PDB (it would block drains).
    assert "strategy" not in _only(docs, "Deployment")["spec"]
    assert by_kind(docs, "PodDisruptionBudget") == []
    lease = args[args.index("--lease-name") + 1]
    assert _named(docs, "Role", "-leader-election")["rules"] == lease_rules(lease)
    # The binary takes the chart's command line as it is.
    options = options_from_args(build_parser().parse_args(args[1:]), Options())
    options.check()
    assert (options.leader_elect, options.lease_name, options.lease_duration) == (
        True,
        "sched-lock",
        30,
    )


def test_leader_election_off_with_several_replicas_is_refused(render: Render) -> None:
    with pytest.raises(HelmError, match=r"leaderElection\.enabled=false with replicas > 1"):
        render("replicas=2", "leaderElection.enabled=false")
    assert not any(
        a.startswith("--leader-elect")
        for a in _container(render("leaderElection.enabled=false"))["args"]
    )


@pytest.mark.parametrize(
    "item",
    [
        "leaderElection.leaseName=Bad Name!",
        "leaderElection.leaseDuration=15",
        "leaderElection.renewDeadline=ten seconds",
        "leaderElection.leaseNamespace=x",
    ],
)
def test_values_schema_refuses_bad_leader_election_values(render: Render, item: str) -> None:
    with pytest.raises(HelmError):
        render("replicas=2", item)


def _notes(helm: str, *sets: str) -> str:
    cmd = [helm, "install", "multisched", str(CHART), "-n", NAMESPACE, "--dry-run"]
    for item in sets:
        cmd += ["--set", item]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return out.stdout.split("NOTES:", 1)[1]


def test_notes_warn_about_one_replica_without_leader_election(helm: str) -> None:
    assert "WARNING: one replica without leader election" in _notes(
        helm, "leaderElection.enabled=false"
    )
    ha = _notes(helm, "replicas=2")
    assert "WARNING" not in ha
    assert f"with leader election (2 replicas, Lease {NAMESPACE}/{FULLNAME})" in ha
    one = _notes(helm)
    assert "WARNING" not in one
    assert f"with leader election (1 replica, Lease {NAMESPACE}/{FULLNAME})" in one


def test_container_command_ports_and_probes(render: Render) -> None:
    docs = render("image.repository=reg.example/multisched", "image.tag=1.2.3")
    container = _container(docs)
    assert container["image"] == "reg.example/multisched:1.2.3"
    assert container["command"] == ["multisched"]
    assert container["args"] == BASE_ARGS + LEADER_ARGS
    assert container["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "https", "containerPort": 10259, "protocol": "TCP"},
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    service = _only(docs, "Service")
    assert service["spec"]["selector"] == _selector(docs)
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 10259, "targetPort": "https", "protocol": "TCP"},
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"},
    ]


def test_image_tag_defaults_to_app_version(render: Render) -> None:
    assert _container(render())["image"] == "multisched:0.1.0"


def test_pod_runs_locked_down(render: Render) -> None:
    docs = render()
    pod = _only(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == _only(docs, "ServiceAccount")["metadata"]["name"]
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == 65532
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    container = _container(docs)
    assert container["securityContext"] == {
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]


def test_release_name_and_namespace_flow_into_the_objects(helm: str) -> None:
    out = subprocess.run(
        [helm, "template", "other", str(CHART), "-n", "sched", "--set", "replicas=2"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    lease = len(BASE_ARGS) + 1
    assert _container(docs)["args"][lease : lease + 4] == [
        "--lease-namespace", "sched", "--lease-name", "other-multisched",
    ]  # fmt: skip
    for doc in docs:
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding", "SchedulerProfile"):
            assert "namespace" not in doc["metadata"]
        else:
            assert doc["metadata"]["namespace"] == "sched", doc["kind"]
            assert doc["metadata"]["name"].startswith("other-multisched"), doc["kind"]
