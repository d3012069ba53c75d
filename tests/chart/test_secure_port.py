"""The secure port in the chart: HTTPS on 10259 with delegated authn/authz (as kube-scheduler),
the reader ClusterRoles callers are bound to, an optional serving certificate from a Secret,
and Prometheus scraping it with its own token."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from chart_support import CHART, NAMESPACE, HelmError, Manifest, by_kind
from multisched.operator.main import build_parser, options_from_args
from multisched.operator.options import Options

Render = Callable[..., list[Manifest]]
FULLNAME = "multisched"
TLS_DIR = "/etc/multisched/tls"
TLS_FLAGS = [f"--tls-cert-file={TLS_DIR}/tls.crt", f"--tls-private-key-file={TLS_DIR}/tls.key"]
PROMETHEUS = (
    "serviceMonitor.prometheusServiceAccount.name=prometheus",
    "serviceMonitor.prometheusServiceAccount.namespace=monitoring",
)
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _pod(docs: list[Manifest]) -> dict[str, Any]:
    (deployment,) = by_kind(docs, "Deployment")
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _container(docs: list[Manifest]) -> dict[str, Any]:
    (container,) = _pod(docs)["containers"]
    return dict(container)


def _named(docs: list[Manifest], kind: str, name: str) -> list[Manifest]:
    return [d for d in by_kind(docs, kind) if d["metadata"]["name"] == name]


def _endpoint(docs: list[Manifest]) -> dict[str, Any]:
    (monitor,) = by_kind(docs, "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    return dict(endpoint)


def test_the_operator_may_ask_who_calls_and_whether_they_may(render: Render) -> None:
    (role,) = _named(render(), "ClusterRole", FULLNAME)
    groups = ("authentication.k8s.io", "authorization.k8s.io")
    reviews = [r for r in role["rules"] if set(r["apiGroups"]) & set(groups)]
    assert reviews == [
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["tokenreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
    ]


@pytest.mark.parametrize(
    ("suffix", "urls"),
    [
        ("-metrics-reader", ["/metrics"]),
        ("-debug-reader", ["/configz", "/debug/queue", "/debug/cache"]),
    ],
)
def test_reader_roles_grant_get_on_exactly_their_paths(
    render: Render, suffix: str, urls: list[str]
) -> None:
    (role,) = _named(render(), "ClusterRole", FULLNAME + suffix)
    kubernetes_validate.validate(role, "1.35.0", strict=True)
    assert role["rules"] == [{"nonResourceURLs": urls, "verbs": ["get"]}]
    assert "namespace" not in role["metadata"]
    labels = role["metadata"]["labels"]
    assert not any(k.startswith("rbac.authorization.k8s.io/aggregate-to") for k in labels)


def test_reader_roles_are_bound_to_nobody_by_default(render: Render) -> None:
    docs = render()
    roles = {r["metadata"]["name"] for r in by_kind(docs, "ClusterRole")}
    assert {FULLNAME + "-metrics-reader", FULLNAME + "-debug-reader"} <= roles
    bound = {b["roleRef"]["name"] for b in by_kind(docs, "ClusterRoleBinding")}
    assert bound == {FULLNAME}


def test_prometheus_service_account_is_bound_to_metrics_reader(render: Render) -> None:
    (binding,) = _named(render(*PROMETHEUS), "ClusterRoleBinding", FULLNAME + "-metrics-reader")
    kubernetes_validate.validate(binding, "1.35.0", strict=True)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": FULLNAME + "-metrics-reader",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
    ]
    assert by_kind(render(*PROMETHEUS, "rbac.create=false"), "ClusterRoleBinding") == []
    with pytest.raises(HelmError, match=r"prometheusServiceAccount\.namespace"):
        render(PROMETHEUS[0])


def test_deployment_serves_the_secure_port_with_a_generated_certificate(render: Render) -> None:
    docs = render()
    container = _container(docs)
    args = container["args"]
    assert "--secure-port=10259" in args
    assert not [a for a in args if a.startswith("--tls-")]
    assert {"name": "https", "containerPort": 10259, "protocol": "TCP"} in container["ports"]
    assert [m["name"] for m in container["volumeMounts"]] == ["tmp"]
    assert [v["name"] for v in _pod(docs)["volumes"]] == ["tmp"]
    # --advertise-address defaults to it: the certificate's and the Lease's address.
    assert {
        "name": "POD_IP",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    } in container["env"]
    # ... and the Service's names, which the operator reads with the pod's namespace.
    env = {e["name"]: e for e in container["env"]}
    (service,) = [s for s in by_kind(docs, "Service") if s["metadata"]["name"].endswith("-metrics")]
    assert env["MULTISCHED_SERVICE_NAME"]["value"] == service["metadata"]["name"]
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    # The probes stay on plain HTTP.
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"


def test_a_tls_secret_is_mounted_and_passed(render: Render) -> None:
    docs = render("tls.secretName=multisched-serving", "securePort=9443")
    container = _container(docs)
    args = container["args"]
    assert "--secure-port=9443" in args
    assert [a for a in args if a.startswith("--tls-")] == TLS_FLAGS
    assert {"name": "https", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert {"name": "tls", "mountPath": TLS_DIR, "readOnly": True} in container["volumeMounts"]
    assert {"name": "tls", "secret": {"secretName": "multisched-serving"}} in _pod(docs)["volumes"]
    (deployment,) = by_kind(docs, "Deployment")
    kubernetes_validate.validate(deployment, "1.35.0", strict=True)


def test_the_operator_takes_the_secure_port_flags(render: Render) -> None:
    args = _container(render("tls.secretName=multisched-serving"))["args"]
    options_from_args(build_parser().parse_args(args[1:]), Options())


@pytest.mark.parametrize(
    "bad", ["securePort=0", "securePort=70000", "tls.secretName=Bad_Name", "tls.extra=1"]
)
def test_values_schema_refuses_bad_secure_port_values(render: Render, bad: str) -> None:
    with pytest.raises(HelmError, match="values don't meet the specifications of the schema"):
        render(bad)


def test_service_exposes_https_and_http_inside_the_cluster(render: Render) -> None:
    (service,) = by_kind(render("service.securePort=443"), "Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"},
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"},
    ]


def test_service_monitor_scrapes_https_with_prometheus_token(render: Render) -> None:
    endpoint = _endpoint(render("serviceMonitor.enabled=true"))
    assert endpoint["port"] == "https"
    assert endpoint["scheme"] == "https"
    assert endpoint["path"] == "/metrics"
    assert endpoint["bearerTokenFile"] == TOKEN_FILE
    # The certificate generated in memory cannot be verified.
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_service_monitor_verifies_a_certificate_from_a_secret(render: Render) -> None:
    verify = (
        "serviceMonitor.enabled=true",
        "serviceMonitor.tlsConfig.serverName=multisched-metrics.multisched.svc",
        "serviceMonitor.tlsConfig.ca.secret.name=multisched-serving",
        "serviceMonitor.tlsConfig.ca.secret.key=ca.crt",
    )
    endpoint = _endpoint(render(*verify, "tls.secretName=multisched-serving"))
    assert endpoint["tlsConfig"] == {
        "serverName": "multisched-metrics.multisched.svc",
        "ca": {"secret": {"name": "multisched-serving", "key": "ca.crt"}},
    }
    assert endpoint["bearerTokenFile"] == TOKEN_FILE
    # Without the Secret the certificate is self-signed: nothing to verify it against.
    assert _endpoint(render(*verify))["tlsConfig"] == {"insecureSkipVerify": True}
    assert _endpoint(render("serviceMonitor.enabled=true", "tls.secretName=s"))["tlsConfig"] == {
        "insecureSkipVerify": True
    }


def test_network_policy_lets_scrapers_reach_https_and_http(render: Render) -> None:
    docs = render(
        "networkPolicy.enabled=true",
        "networkPolicy.apiServerCIDRs={10.0.0.1/32}",
        "networkPolicy.apiServerPort=6443",
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
    )
    (policy,) = by_kind(docs, "NetworkPolicy")
    kubernetes_validate.validate(policy, "1.35.0", strict=True)
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["ports"] == [
        {"port": "https", "protocol": "TCP"},
        {"port": "http", "protocol": "TCP"},
    ]
    # Named ports: each must exist on the container.
    names = {p["name"] for p in _container(docs)["ports"]}
    assert {p["port"] for p in ingress["ports"]} <= names


def _notes(helm: str, *sets: str) -> str:
    cmd = [helm, "install", "multisched", str(CHART), "-n", NAMESPACE, "--dry-run=client"]
    for item in sets:
        cmd += ["--set", item]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return out.stdout.split("NOTES:", 1)[1]


def test_notes_say_which_role_reads_what(helm: str) -> None:
    notes = _notes(helm)
    assert "HTTPS, port https of Service multisched-metrics" in notes
    assert f"/metrics (Prometheus' ServiceAccount): {FULLNAME}-metrics-reader\n" in notes
    assert f"`kubectl multisched queue`: {FULLNAME}-debug-reader" in notes
    assert "(bound to monitoring/prometheus)" in _notes(helm, *PROMETHEUS)
    assert "nonResourceURLs /metrics" in _notes(helm, "rbac.create=false")
