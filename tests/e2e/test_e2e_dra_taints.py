"""DeviceTaintRules (DRADeviceTaintRules, GA in v1.37) on the v1.37.2 control plane: a rule
that taints one node's device NoSchedule keeps claims off it, a pod that only that device
could serve waits with kube-scheduler's message, and deleting the rule lets it in at once
(the rule's removal is that slice's update, which requeues the pod).

Played once under multisched and once under kube-scheduler v1.37.2 on the same API server,
then compared, as test_e2e_dra.py does."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from parity_support import UPSTREAM, tear_down
from test_e2e_dra import (
    API,
    Driver,
    claiming,
    device_request,
    failed_message,
    node_of,
)

from conftest import Kube

_runs = itertools.count()


def play(kube: Kube, scheduler: str) -> dict[str, Any]:
    """The scenario under ``scheduler``; what it saw, with this run's tag taken out."""
    tag = f"dtr{next(_runs)}"
    driver = Driver(kube, tag)
    n1, n2 = f"{tag}-n1", f"{tag}-n2"
    for node in (n1, n2):
        kube.add_node(node)
        driver.publish(node, ["small"])
    gpu, template, rule = f"{tag}-gpu", f"{tag}-any", f"{tag}-broken"
    driver.device_class(gpu, ["small"])
    kube.apply(
        {
            "apiVersion": API,
            "kind": "DeviceTaintRule",
            "metadata": {"name": rule},
            "spec": {
                "deviceSelector": {"driver": driver.name, "pool": n1},
                "taint": {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"},
            },
        }
    )
    kube.apply(
        {
            "apiVersion": API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template, "namespace": "default"},
            "spec": {"spec": device_request(gpu)},
        }
    )
    driver.objects += [("devicetaintrule", rule), ("resourceclaimtemplate", template)]
    first, second = f"{tag}-first", f"{tag}-second"
    seen: dict[str, Any] = {}
    untag = lambda text: text.replace(tag, "TAG")  # noqa: E731
    try:
        # Both devices are free, but n1's is tainted: the claim gets n2's.
        kube.apply(claiming(first, scheduler, resourceClaimTemplateName=template))
        kube.wait_for(f"{first} bound", lambda: node_of(kube, first), 60)
        seen["first"] = untag(node_of(kube, first))
        # n2's device is taken and n1's tainted: the next pod waits.
        kube.apply(claiming(second, scheduler, resourceClaimTemplateName=template))
        message = kube.wait_for(
            "the FailedScheduling event", lambda: failed_message(kube, second), 60
        )
        seen["waiting"] = (untag(node_of(kube, second)), untag(message))
        # The rule goes: the pod is retried at once (well within the 5 minutes an
        # unschedulable pod waits without an event) and gets n1's device.
        kube.run("delete", "devicetaintrule", rule)
        kube.wait_for(f"{second} bound", lambda: node_of(kube, second), 60)
        seen["after"] = untag(node_of(kube, second))
        return seen
    finally:
        tear_down(kube, [first, second], *driver.objects)
        kube.remove_nodes(n1, n2)


def test_device_taint_rules_keep_pods_off_devices_as_kube_scheduler_does(
    kube: Kube, controllers: Path, multisched_profile: str, kube_scheduler: Path
) -> None:
    ours = play(kube, multisched_profile)
    assert ours["first"] == "TAG-n2"
    node, message = ours["waiting"]
    assert node == ""
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims."), message
    assert ours["after"] == "TAG-n1"
    theirs = play(kube, UPSTREAM)
    assert ours == theirs
