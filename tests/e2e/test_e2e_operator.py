"""multisched against a real API server, as the seeds' walkthrough runs a second scheduler."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from conftest import Kube

_ids = itertools.count()


def profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": spec,
    }


def pod(name: str, scheduler: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
        **spec,
    }
    if scheduler is not None:
        body["schedulerName"] = scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"name": "multischeduler-example"},
        },
        "spec": body,
    }


def condition(kube: Kube, name: str) -> dict[str, Any]:
    obj = kube.get("schedulerprofile", name)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready":
            return dict(c)
    return {}


def lease_holder(kube: Kube, lease: str) -> str:
    jsonpath = "jsonpath={.spec.holderIdentity}"
    out = kube.run("get", "lease", lease, "-n", "default", "-o", jsonpath, check=False)
    return out.stdout.strip()


@pytest.fixture
def sched_name() -> str:
    return f"e2e-sched-{next(_ids)}"


def test_seeds_walkthrough(kube: Kube, start_operator: Any, sched_name: str) -> None:
    kube.add_node("worker-1")
    kube.add_node("worker-2")
    # The pods exist before the scheduler: ours stays Pending until its profile appears.
    kube.apply(pod("no-annotation"))
    kube.apply(pod("annotation-default-scheduler", "default-scheduler"))
    kube.apply(pod("annotation-second-scheduler", sched_name))
    op = start_operator()
    kube.apply(profile(sched_name, {"profiles": [{"schedulerName": sched_name}]}))
    node = kube.wait_for(
        "the my-scheduler pod to be bound", lambda: kube.node_of("annotation-second-scheduler"), 45
    )
    assert node in ("worker-1", "worker-2"), op.output()
    events = kube.events_for("Pod", "annotation-second-scheduler")
    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert scheduled, events
    assert scheduled[0]["message"] == (
        f"Successfully assigned default/annotation-second-scheduler to {node}"
    )
    source = scheduled[0].get("reportingComponent") or scheduled[0]["source"].get("component")
    assert source == sched_name
    # The other two are not ours: untouched, no events from us.
    for other in ("no-annotation", "annotation-default-scheduler"):
        assert kube.node_of(other) == ""
        assert kube.events_for("Pod", other) == []
        assert not (kube.get("pod", other).get("status") or {}).get("conditions")
    ready = kube.wait_for("Ready=True", lambda: condition(kube, sched_name).get("status") == "True")
    assert ready


def test_live_edit_and_bad_edit(kube: Kube, start_operator: Any, sched_name: str) -> None:
    kube.add_node("gold-1", {"tier": "gold"})
    kube.add_node("silver-1", {"tier": "silver"})

    def pinned_to(tier: str) -> dict[str, Any]:
        return profile(
            sched_name,
            {
                "profiles": [
                    {
                        "schedulerName": sched_name,
                        "pluginConfig": [
                            {
                                "name": "NodeAffinity",
                                "args": {
                                    "addedAffinity": {
                                        "requiredDuringSchedulingIgnoredDuringExecution": {
                                            "nodeSelectorTerms": [
                                                {
                                                    "matchExpressions": [
                                                        {
                                                            "key": "tier",
                                                            "operator": "In",
                                                            "values": [tier],
                                                        }
                                                    ]
                                                }
                                            ]
                                        }
                                    }
                                },
                            }
                        ],
                    }
                ]
            },
        )

    start_operator()
    kube.apply(pinned_to("gold"))
    kube.apply(pod(f"{sched_name}-a", sched_name))
    assert kube.wait_for("pod a bound", lambda: kube.node_of(f"{sched_name}-a"), 45) == "gold-1"

    # A live edit (what `kubectl edit` sends): the next pod follows the new plugins.
    kube.apply(pinned_to("silver"))
    kube.wait_for(
        "observedGeneration to catch up",
        lambda: (
            kube.get("schedulerprofile", sched_name).get("status", {}).get("observedGeneration")
            == kube.get("schedulerprofile", sched_name)["metadata"]["generation"]
        ),
    )
    kube.apply(pod(f"{sched_name}-b", sched_name))
    assert kube.wait_for("pod b bound", lambda: kube.node_of(f"{sched_name}-b"), 45) == "silver-1"

    # A bad edit the API server refuses itself (weight on a filter plugin): nothing stored.
    bad_schema = profile(
        sched_name,
        {
            "profiles": [
                {
                    "schedulerName": sched_name,
                    "plugins": {"filter": {"enabled": [{"name": "NodeName", "weight": 3}]}},
                }
            ]
        },
    )
    refused = kube.run(
        "apply", "-f", "-", stdin=__import__("yaml").safe_dump(bad_schema), check=False
    )
    assert refused.returncode != 0

    # A bad edit only the operator can judge (unknown plugin): Ready=False + Warning event,
    # and the last good profile keeps scheduling.
    kube.apply(
        profile(
            sched_name,
            {
                "profiles": [
                    {
                        "schedulerName": sched_name,
                        "plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}},
                    }
                ]
            },
        )
    )
    cond = kube.wait_for(
        "Ready=False",
        lambda: c if (c := condition(kube, sched_name)).get("status") == "False" else None,
    )
    assert cond["reason"] == "InvalidConfiguration"
    assert "NoSuchPlugin" in cond["message"]
    warnings = kube.wait_for(
        "a Warning event",
        lambda: [
            e
            for e in kube.events_for("SchedulerProfile", sched_name, "default")
            + kube.get("events", "-A")["items"]
            if e["involvedObject"]["name"] == sched_name and e["type"] == "Warning"
        ],
    )
    assert any("NoSuchPlugin" in e["message"] for e in warnings)
    kube.apply(pod(f"{sched_name}-c", sched_name))
    assert kube.wait_for("pod c bound", lambda: kube.node_of(f"{sched_name}-c"), 45) == "silver-1"


def test_leader_election_failover(kube: Kube, start_operator: Any, sched_name: str) -> None:
    kube.add_node("le-node")
    kube.apply(profile(sched_name, {"profiles": [{"schedulerName": sched_name}]}))
    lease = f"{sched_name}-lease"
    args = ("--leader-elect=true", "--lease-namespace", "default", "--lease-name", lease)
    first, second = start_operator(*args), start_operator(*args)
    holder = kube.wait_for("a lease holder", lambda: lease_holder(kube, lease), 30)
    kube.apply(pod(f"{sched_name}-1", sched_name))
    assert kube.wait_for("pod 1 bound", lambda: kube.node_of(f"{sched_name}-1"), 45)
    # Kill whichever replica leads; the other must take over and schedule the next pod.
    became = f"became leader: lease default/{lease} ({holder})"
    leader = kube.wait_for(
        "the leader's log line",
        lambda: next((o for o in (first, second) if became in o.output()), None),
    )
    leader.stop(kill=True)
    kube.apply(pod(f"{sched_name}-2", sched_name))
    assert kube.wait_for(
        "pod 2 bound by the new leader", lambda: kube.node_of(f"{sched_name}-2"), 60
    )
    new_holder = lease_holder(kube, lease)
    assert new_holder and new_holder != holder
