"""What the chart lets multisched do, and the operational edges an admin hits: reserved names,
RBAC switches, probes sized for a large first listing, overridable security contexts, the
optional NetworkPolicy, a ClusterIP-only Service, the CRD upgrade note, and scheduler-plugins'
PodGroups and ElasticQuotas (read, their status kept, their CRDs optionally installed)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from chart_support import (
    CHART,
    CHART_SCHEDULER_PLUGINS_CRDS,
    CRD_PATH,
    SCHEDULER_PLUGINS_CRDS,
    HelmError,
    Manifest,
    by_kind,
)
from multisched.operator.main import build_parser, options_from_args
from multisched.operator.options import Options

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


@pytest.mark.parametrize("empty", ["[]", "null"])
def test_no_reserved_names_is_refused(helm: str, tmp_path: Path, empty: str) -> None:
    """Refused at render time, as the operator refuses an empty --reserved-scheduler-names."""
    values = tmp_path / "values.yaml"
    values.write_text(f"reservedSchedulerNames: {empty}\n")
    cmd = [helm, "template", "x", str(CHART), "-f", str(values)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 1
    assert "reservedSchedulerNames is empty: that turns off the operator's refusal" in out.stderr


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


API_SERVER = ("networkPolicy.apiServerCIDRs={10.0.0.1/32}", "networkPolicy.apiServerPort=6443")


def test_network_policy_is_optional_and_valid(render: Render) -> None:
    assert by_kind(render(), "NetworkPolicy") == []
    docs = render(
        "networkPolicy.enabled=true",
        *API_SERVER,
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
    )
    (policy,) = by_kind(docs, "NetworkPolicy")
    kubernetes_validate.validate(policy, "1.35.0", strict=True)
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = spec["ingress"]
    assert ingress["from"] == [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    # The API server only: no DNS unless asked (the operator dials KUBERNETES_SERVICE_HOST).
    (api,) = spec["egress"]
    assert api == {
        "ports": [{"port": 6443, "protocol": "TCP"}],
        "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}],
    }


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (
            ("networkPolicy.apiServerPort=443",),
            "networkPolicy.enabled needs networkPolicy.apiServerCIDRs: the API server's",
        ),
        (
            ("networkPolicy.apiServerCIDRs={10.0.0.1/32}",),
            "networkPolicy.enabled needs networkPolicy.apiServerPort: the API server's",
        ),
    ],
)
def test_network_policy_needs_the_api_servers_addresses_and_port(
    render: Render, sets: tuple[str, ...], message: str
) -> None:
    """Without them the policy would shut the operator off the API server (or, as before,
    open the port to every address)."""
    with pytest.raises(HelmError, match=message):
        render("networkPolicy.enabled=true", *sets)


def test_network_policy_follows_a_managed_clusters_port_and_opens_dns_when_asked(
    render: Render,
) -> None:
    managed = ("networkPolicy.apiServerCIDRs={172.16.0.2/32,172.16.0.3/32}",)
    docs = render("networkPolicy.enabled=true", *managed, "networkPolicy.apiServerPort=443")
    (policy,) = by_kind(docs, "NetworkPolicy")
    (api,) = policy["spec"]["egress"]
    assert api["ports"] == [{"port": 443, "protocol": "TCP"}]
    assert [peer["ipBlock"]["cidr"] for peer in api["to"]] == ["172.16.0.2/32", "172.16.0.3/32"]

    dns_sets = ("networkPolicy.enabled=true", *API_SERVER, "networkPolicy.dns=true")
    (policy,) = by_kind(render(*dns_sets), "NetworkPolicy")
    kubernetes_validate.validate(policy, "1.35.0", strict=True)
    api, dns = policy["spec"]["egress"]
    assert dns == {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}
    (policy,) = by_kind(
        render(*dns_sets, "networkPolicy.dnsCIDRs={10.96.0.10/32}"), "NetworkPolicy"
    )
    api, dns = policy["spec"]["egress"]
    assert dns["to"] == [{"ipBlock": {"cidr": "10.96.0.10/32"}}]


def test_both_ports_bind_the_chosen_address_family(render: Render) -> None:
    args = _container(render())["args"]
    assert "--bind-address=0.0.0.0" in args and "http://0.0.0.0:8080/healthz" in args
    args = _container(render("bindAddress=::"))["args"]
    assert "--bind-address=::" in args and "http://[::]:8080/healthz" in args
    opts = options_from_args(build_parser().parse_args(args[1:]), Options())
    assert (opts.bind_address, opts.http_host) == ("::", "::")
    with pytest.raises(HelmError, match="bindAddress"):
        render("bindAddress=10.0.0.1")


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


# --- scheduler-plugins: PodGroup (Coscheduling) and ElasticQuota (CapacityScheduling) ---------

SP_GROUP = "scheduling.x-k8s.io"
SP_CRD_FILES = ("scheduling.x-k8s.io_elasticquotas.yaml", "scheduling.x-k8s.io_podgroups.yaml")
SP_READ = {"apiGroups": [SP_GROUP], "resources": ["podgroups", "elasticquotas"],
           "verbs": ["get", "list", "watch"]}  # fmt: skip
SP_STATUS = {"apiGroups": [SP_GROUP], "resources": ["podgroups/status", "elasticquotas/status"],
             "verbs": ["patch"]}  # fmt: skip
NO_GROUP_STATUS = "--group-status=false"


def _cluster_role(docs: list[Manifest]) -> Manifest:
    (role,) = [r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == "multisched"]
    return role


def _sp_rules(docs: list[Manifest]) -> list[dict[str, Any]]:
    return [r for r in _cluster_role(docs)["rules"] if SP_GROUP in r["apiGroups"]]


def _sp_crds() -> dict[str, Manifest]:
    crds = (yaml.safe_load((SCHEDULER_PLUGINS_CRDS / name).read_text()) for name in SP_CRD_FILES)
    return {crd["metadata"]["name"]: crd for crd in crds}


def _group_status(args: list[str]) -> bool:
    """What the operator makes of the chart's command line."""
    options = options_from_args(build_parser().parse_args(args[1:]), Options())
    options.check()
    return options.group_status


def test_scheduler_plugins_objects_are_read_and_their_status_kept_by_default(
    render: Render,
) -> None:
    docs = render()
    assert _sp_rules(docs) == [SP_READ, SP_STATUS]
    args = _container(docs)["args"]
    assert not any(a.startswith("--group-status") for a in args)
    assert _group_status(args) is True


def test_the_rules_name_the_crds_plurals_and_status_subresources() -> None:
    crds = _sp_crds()
    assert {c["spec"]["group"] for c in crds.values()} == {SP_GROUP}
    plurals = [c["spec"]["names"]["plural"] for c in crds.values()]
    assert sorted(plurals) == sorted(SP_READ["resources"])
    assert sorted(f"{p}/status" for p in plurals) == sorted(SP_STATUS["resources"])
    for crd in crds.values():
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}


def test_status_controllers_off_leaves_status_to_scheduler_plugins(render: Render) -> None:
    docs = render("schedulerPlugins.statusControllers=false")
    assert _sp_rules(docs) == [SP_READ]
    args = _container(docs)["args"]
    assert args.count(NO_GROUP_STATUS) == 1
    assert _group_status(args) is False


def test_scheduler_plugins_disabled_grants_nothing_and_keeps_no_status(render: Render) -> None:
    docs = render("schedulerPlugins.enabled=false")
    assert _sp_rules(docs) == []
    args = _container(docs)["args"]
    assert NO_GROUP_STATUS in args
    assert _group_status(args) is False


def test_chart_carries_identical_copies_of_the_scheduler_plugins_crds() -> None:
    shipped = sorted(p.name for p in SCHEDULER_PLUGINS_CRDS.glob("*.yaml"))
    assert shipped == sorted(SP_CRD_FILES)
    assert sorted(p.name for p in CHART_SCHEDULER_PLUGINS_CRDS.iterdir()) == shipped
    for name in shipped:
        copy = (CHART_SCHEDULER_PLUGINS_CRDS / name).read_bytes()
        assert copy == (SCHEDULER_PLUGINS_CRDS / name).read_bytes(), name


def test_scheduler_plugins_crds_are_not_installed_by_default(render: Render) -> None:
    assert by_kind(render(), "CustomResourceDefinition") == []
    assert by_kind(render("schedulerPlugins.enabled=false"), "CustomResourceDefinition") == []


@pytest.mark.parametrize("kube_version", ["1.35.0", latest_version()])
def test_install_crds_renders_them_unchanged_and_kept_on_uninstall(
    render: Render, kube_version: str
) -> None:
    rendered = by_kind(
        render("schedulerPlugins.installCRDs=true", kube_version=kube_version),
        "CustomResourceDefinition",
    )
    expected = _sp_crds()
    for crd in expected.values():
        crd["metadata"]["annotations"]["helm.sh/resource-policy"] = "keep"
    assert {c["metadata"]["name"]: c for c in rendered} == expected
    assert len(rendered) == len(expected)
    for crd in rendered:
        kubernetes_validate.validate(crd, kube_version, strict=True)


def test_values_schema_refuses_unknown_scheduler_plugins_values(render: Render) -> None:
    with pytest.raises(HelmError, match="additional properties"):
        render("schedulerPlugins.installCRD=true")
    with pytest.raises(HelmError):
        render("schedulerPlugins.enabled=yes")


def _notes(helm: str, *sets: str) -> str:
    cmd = [helm, "install", "x", str(CHART), "--dry-run=client", "--namespace", "ms"]
    for item in sets:
        cmd += ["--set", item]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("NOTES:", 1)[1]


def test_notes_say_how_to_install_the_scheduler_plugins_crds(helm: str) -> None:
    hint = "kubectl apply -f crds/scheduler-plugins/"
    assert hint in _notes(helm)
    assert hint not in _notes(helm, "schedulerPlugins.installCRDs=true")
    assert hint not in _notes(helm, "schedulerPlugins.enabled=false")
