"""What the chart lets multisched do, and the operational edges an admin hits: reserved names,
RBAC switches, probes sized for a large first listing, overridable security contexts, the
optional NetworkPolicy, a ClusterIP-only Service, and the CRD upgrade note."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
import yaml

from chart_support import CHART, CRD_PATH, Manifest, by_kind

Render = Callable[..., list[Manifest]]


def _container(docs: list[Manifest]) -> dict[str, Any]:
    (deployment,) = by_kind(docs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _template(helm: str, *sets: str) -> subprocess.CompletedProcess[str]:
    cmd = [helm, "template", "x", str(CHART)]
    for item in sets:
        cmd += ["--set", item]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_reserved_names_reach_the_operator(render: Render) -> None:
    args = _container(render("reservedSchedulerNames={default-scheduler,volcano}"))["args"]
    assert "--reserved-scheduler-names=default-scheduler,volcano" in args


def test_the_crd_refuses_default_scheduler_by_cel() -> None:
    crd = yaml.safe_load(CRD_PATH.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    item = schema["properties"]["spec"]["properties"]["profiles"]["items"]
    rules = {r["rule"]: r for r in item["x-kubernetes-validations"]}
    rule = rules["self.schedulerName != 'default-scheduler'"]
    assert rule["fieldPath"] == ".schedulerName"
    assert "kube-scheduler's name" in rule["message"]


def test_no_service_account_means_no_render(helm: str) -> None:
    out = _template(helm, "serviceAccount.create=false")
    assert out.returncode != 0
    assert "serviceAccount.create=false needs serviceAccount.name" in out.stderr
    named = _template(helm, "serviceAccount.create=false", "serviceAccount.name=sched")
    assert named.returncode == 0, named.stderr
    docs = [d for d in yaml.safe_load_all(named.stdout) if d]
    assert by_kind(docs, "ServiceAccount") == []
    (binding,) = by_kind(docs, "ClusterRoleBinding")
    assert binding["subjects"][0]["name"] == "sched"


def test_rbac_create_false_renders_no_role(render: Render) -> None:
    docs = render("rbac.create=false", "replicas=2")
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        assert by_kind(docs, kind) == [], kind


def test_profile_roles_are_optional_and_not_aggregated(render: Render) -> None:
    assert not [r for r in by_kind(render(), "ClusterRole") if "profile" in r["metadata"]["name"]]
    roles = {
        r["metadata"]["name"]: r
        for r in by_kind(render("profileRoles.create=true"), "ClusterRole")
        if "profile" in r["metadata"]["name"]
    }
    assert set(roles) == {"multisched-profile-editor", "multisched-profile-viewer"}
    for role in roles.values():
        labels = role["metadata"]["labels"]
        assert not any(k.startswith("rbac.authorization.k8s.io/aggregate-to") for k in labels)
    (viewer,) = roles["multisched-profile-viewer"]["rules"]
    assert viewer["verbs"] == ["get", "list", "watch"]
    (editor,) = roles["multisched-profile-editor"]["rules"]
    assert set(editor["verbs"]) >= {"create", "update", "patch", "delete"}


def test_probes_allow_a_long_first_listing(render: Render) -> None:
    container = _container(render())
    startup = container["startupProbe"]
    assert startup["httpGet"] == {"path": "/healthz", "port": "http"}
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["timeoutSeconds"] >= 5, probe
    tuned = _container(render("probes.startup.failureThreshold=120"))["startupProbe"]
    assert tuned["failureThreshold"] == 120


def test_security_contexts_are_restricted_by_default_and_overridable(render: Render) -> None:
    docs = render()
    (deployment,) = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert _container(docs)["securityContext"]["allowPrivilegeEscalation"] is False
    # OpenShift's restricted-v2 picks the UIDs itself.
    openshift = render(
        "podSecurityContext.runAsUser=null",
        "podSecurityContext.runAsGroup=null",
        "podSecurityContext.fsGroup=null",
    )
    (deployment,) = by_kind(openshift, "Deployment")
    context = deployment["spec"]["template"]["spec"]["securityContext"]
    assert "runAsUser" not in context and context["runAsNonRoot"] is True


def test_network_policy_is_optional_and_valid(render: Render) -> None:
    assert by_kind(render(), "NetworkPolicy") == []
    docs = render(
        "networkPolicy.enabled=true",
        "networkPolicy.apiServerCIDRs={10.0.0.1/32}",
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
    )
    (policy,) = by_kind(docs, "NetworkPolicy")
    kubernetes_validate.validate(policy, "1.28.0", strict=True)
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = spec["ingress"]
    assert ingress["from"] == [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    dns, api = spec["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    assert api["to"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}]


@pytest.mark.parametrize("kind", ["LoadBalancer", "NodePort"])
def test_the_service_is_never_exposed_outside_the_cluster(helm: str, kind: str) -> None:
    out = _template(helm, f"service.type={kind}")
    assert out.returncode != 0
    assert "values don't meet the specifications of the schema" in out.stderr


def test_notes_tell_to_apply_the_crds_on_upgrade(helm: str) -> None:
    out = subprocess.run(
        [helm, "install", "x", str(CHART), "--dry-run", "--namespace", "ms"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "Helm installs crds/ once and never upgrades it" in out.stdout
    assert "kubectl apply -f" in out.stdout
