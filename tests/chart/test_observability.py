"""The chart's Grafana dashboard and PrometheusRule: rendered only when asked for, and every
query reads a metric the operator really exports (a renamed metric breaks this test, not a
dashboard in production)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from builders import pod_dict
from chart_support import CHART, Manifest, by_kind
from multisched.cache import Cache, PodInfo
from multisched.operator.metrics import Metrics
from multisched.queue import SchedulingQueue
from multisched.scheduler.introspect import EngineView

Render = Callable[..., list[Manifest]]
ENABLED = ("grafanaDashboard.enabled=true", "prometheusRule.enabled=true")
#: kube-scheduler's names, which multisched exports, and multisched's own.
METRIC = re.compile(r"\b(?:scheduler|multisched)_[a-z_]+\b")
#: How a query keeps to multisched's targets (a kube-scheduler scraped beside it exports
#: the same scheduler_* names): only instances that export multisched_leader.
SCOPED = re.compile(r"and on \(instance\) multisched_leader|on \(instance\) group_left \(\)")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def exported_metric_names() -> set[str]:
    """Sample names of a live Metrics object after every hook has fired once."""
    metrics = Metrics()
    queue = SchedulingQueue(lambda a, b: a.timestamp < b.timestamp)
    queue.add(PodInfo.parse(pod_dict("p", scheduler_name="p")))
    metrics.track_scheduler(EngineView(queue, Cache()))
    metrics.track_profiles(lambda: {"p": True})
    metrics.attempt("p", "unschedulable", 0.001)
    metrics.algorithm(0.001)
    metrics.bound("p", 0.02, 0.01, 0.1, 1, after_flush=False)
    metrics.binding_failed("p")
    metrics.plugin("NodeResourcesFit", "Filter", "Success", 0.00001)
    recorder = metrics.framework_recorder("p")
    recorder.extension_point("Filter", "Success", 0.001)
    recorder.permit_wait("Success", 0.1)
    recorder.preemption_attempt()
    recorder.preemption_victims(1)
    metrics.leader.set(1)
    names = set()
    for line in metrics.render().decode().splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def dashboard(docs: list[Manifest]) -> dict[str, Any]:
    (configmap,) = by_kind(docs, "ConfigMap")
    parsed: dict[str, Any] = json.loads(configmap["data"]["multisched.json"])
    return parsed


def rules(docs: list[Manifest]) -> list[dict[str, Any]]:
    (rule,) = by_kind(docs, "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_off_by_default(render: Render) -> None:
    docs = render()
    assert by_kind(docs, "PrometheusRule") == []
    assert [
        d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("dashboard")
    ] == []


def test_lint_clean_when_enabled(helm: str) -> None:
    cmd = [helm, "lint", "--strict", str(CHART)]
    for item in ENABLED:
        cmd += ["--set", item]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_dashboard_is_a_configmap_for_the_grafana_sidecar(render: Render) -> None:
    docs = render(*ENABLED, "grafanaDashboard.namespace=monitoring")
    (configmap,) = by_kind(docs, "ConfigMap")
    kubernetes_validate.validate(configmap, "1.35.0", strict=True)
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "monitoring"
    titles = " / ".join(p["title"] for p in dashboard(docs)["panels"]).lower()
    for wanted in (
        "scheduling rate",
        "attempts by result",
        "e2e scheduling latency",
        "pending pods by queue",
        "plugin execution time",
        "leader",
        "binding errors",
    ):
        assert wanted in titles


def test_rules_alert_on_what_an_operator_must_know(render: Render) -> None:
    docs = render(*ENABLED, "prometheusRule.unschedulableFor=1h")
    alerts = {r["alert"]: r for r in rules(docs)}
    assert set(alerts) == {
        "MultischedPodsUnschedulable",
        "MultischedNoLeader",
        "MultischedBindingErrors",
        "MultischedProfileNotReady",
    }
    assert alerts["MultischedPodsUnschedulable"]["for"] == "1h"
    assert alerts["MultischedNoLeader"]["labels"]["severity"] == "critical"
    # Alertmanager templating survives helm: the label reaches Prometheus as written.
    assert "{{ $labels.profile }}" in alerts["MultischedBindingErrors"]["annotations"]["summary"]


def test_every_query_uses_an_exported_metric(render: Render) -> None:
    docs = render(*ENABLED)
    exprs = [t["expr"] for p in dashboard(docs)["panels"] for t in p["targets"]]
    exprs += [r["expr"] for r in rules(docs)]
    exported = exported_metric_names()
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert used, "no metric in any query"
    assert used <= exported, f"queried but never exported: {sorted(used - exported)}"
    # Histograms are queried by their series, not by the bare family name.
    families = {n.removesuffix(s) for n in exported for s in HISTOGRAM_SUFFIXES if n.endswith(s)}
    assert not used & families


def test_every_scheduler_query_keeps_to_multisched_targets(render: Render) -> None:
    docs = render(*ENABLED)
    exprs = [t["expr"] for p in dashboard(docs)["panels"] for t in p["targets"]]
    exprs += [r["expr"] for r in rules(docs)]
    upstream_named = [e for e in exprs if re.search(r"\bscheduler_", e)]
    assert upstream_named
    for expr in upstream_named:
        assert SCOPED.search(expr), expr


@pytest.mark.parametrize("bad", ["prometheusRule.noLeaderFor=soon", "grafanaDashboard.extra=1"])
def test_values_schema_refuses_bad_observability_values(helm: str, bad: str) -> None:
    out = subprocess.run(
        [helm, "template", "x", str(CHART), "--set", bad],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode != 0
    assert "values don't meet the specifications of the schema" in out.stderr


def test_every_query_is_valid_promql(render: Render) -> None:
    import promql_parser

    docs = render(*ENABLED)
    exprs = [t["expr"] for p in dashboard(docs)["panels"] for t in p["targets"]]
    exprs += [r["expr"] for r in rules(docs)]
    for expr in exprs:
        # Grafana fills $__rate_interval in before Prometheus sees the query.
        promql_parser.parse(expr.replace("$__rate_interval", "5m"))
