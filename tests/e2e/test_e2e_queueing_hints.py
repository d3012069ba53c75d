"""The scheduling queue as v1.37 runs it, on a real API server: a node's label change wakes
only the pods a rejecting plugin's queueing hint says it may help, and a pod still backing
off is popped at once when activeQ is empty (SchedulerPopFromBackoffQ)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from test_e2e_operating import METRICS_PATHS, https_get, reader, up
from test_e2e_operator import pod, profile

from conftest import Kube


def sample(text: str, name: str, **labels: str) -> float:
    """A sample's value in a Prometheus exposition; 0 when the series is absent."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            return float(value)
    return 0.0


class Scrape:
    def __init__(self, kube: Kube, op: Any, suffix: str) -> None:
        self.url = up(kube, op)
        self.token = reader(kube, f"e2e-hints-{suffix}", METRICS_PATHS)

    def __call__(self) -> str:
        status, body = https_get(f"{self.url}/metrics", self.token)
        assert status == 200, body
        return body

    def attempts(self, profile_name: str, result: str) -> float:
        return sample(
            self(), "scheduler_schedule_attempts_total", profile=profile_name, result=result
        )


def test_a_node_label_change_wakes_only_the_pods_it_can_help(
    kube: Kube, start_operator: Any
) -> None:
    suffix = uuid.uuid4().hex[:6]
    sched, node = f"e2e-hints-{suffix}", f"hints-{suffix}"
    scrape = Scrape(kube, start_operator(), suffix)
    kube.add_node(node, cpu="4")
    kube.apply(profile(f"hints-{suffix}", {"profiles": [{"schedulerName": sched}]}))
    zoned = pod(f"zoned-{suffix}", sched, nodeSelector={f"zone-{suffix}": "a"})
    big = pod(f"big-{suffix}", sched)
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8"}}
    kube.apply(zoned)
    kube.apply(big)
    # Both tried once and pooled: NodeAffinity rejected one, NodeResourcesFit the other.
    kube.wait_for(
        "two unschedulable attempts", lambda: scrape.attempts(sched, "unschedulable") == 2, 60
    )

    kube.run("label", "node", node, f"zone-{suffix}=a")
    kube.wait_for("the zoned pod bound", lambda: kube.node_of(f"zoned-{suffix}") == node, 30)
    # NodeAffinity's hint queued the zoned pod; Fit registered no label change: the big
    # pod stayed in the pool, not tried again.
    time.sleep(3)
    text = scrape()
    assert sample(text, "scheduler_schedule_attempts_total", profile=sched, result="scheduled") == 1
    assert scrape.attempts(sched, "unschedulable") == 2
    moved = sum(
        sample(text, "scheduler_queue_incoming_pods_total", queue=q, event="NodeUpdateNodeLabel")
        for q in ("active", "backoff")
    )
    assert moved >= 1
    assert kube.node_of(f"big-{suffix}") == ""
    hint_runs = sample(
        text,
        "scheduler_queueing_hint_execution_duration_seconds_count",
        plugin="NodeAffinity",
        event="NodeUpdateNodeLabel",
        hint="Queue",
    )
    assert hint_runs >= 1


def test_a_pod_still_backing_off_is_popped_when_active_q_is_empty(
    kube: Kube, start_operator: Any
) -> None:
    suffix = uuid.uuid4().hex[:6]
    sched, large = f"e2e-popbackoff-{suffix}", f"large-{suffix}"
    scrape = Scrape(kube, start_operator(), suffix)
    kube.add_node(large, cpu="4")
    hold = [{"key": "hold", "effect": "NoSchedule"}]
    taint = json.dumps([{"op": "add", "path": "/spec/taints", "value": hold}])
    kube.run("patch", "node", large, "--type=json", "-p", taint)
    kube.apply(profile(f"popbackoff-{suffix}", {"profiles": [{"schedulerName": sched}]}))
    kube.apply(pod(f"held-{suffix}", sched))
    kube.wait_for("the failed attempt", lambda: scrape.attempts(sched, "unschedulable") == 1, 60)

    # The taint goes within the pod's backoff (1 s, to the end of its 1 s ordering window):
    # TaintToleration's hint sends it to backoffQ, and with activeQ empty it is popped from
    # there at once rather than when its backoff ends.
    kube.run(
        "patch", "node", large, "--type=json", "-p", '[{"op": "remove", "path": "/spec/taints"}]'
    )
    kube.wait_for("the binding", lambda: kube.node_of(f"held-{suffix}") == large, 30)
    text = scrape()

    def incoming(queue: str, event: str) -> float:
        return sample(text, "scheduler_queue_incoming_pods_total", queue=queue, event=event)

    if incoming("active", "NodeUpdateNodeTaint") and not incoming("backoff", "NodeUpdateNodeTaint"):
        pytest.skip("the taint's removal came after the pod's backoff: nothing was backing off")
    assert incoming("backoff", "NodeUpdateNodeTaint") >= 1
    assert incoming("active", "PopFromBackoffQ") >= 1
