"""DynamicResources, the stand-in: a pod with resource claims is never bound (multisched
does not allocate claims), every other pod is skipped; its args are checked as upstream's
TestValidateDynamicResourcesArgs with v1.37's default gates."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node_dict, pod_dict
from multisched.cache import PodInfo
from multisched.framework import Code, CycleState
from multisched.plugins.dynamicresources import (
    ERR_CLAIMS_NOT_ALLOCATED,
    DynamicResources,
    DynamicResourcesArgs,
)
from volume_support import run

CLAIMS = [{"name": "gpu", "resourceClaimName": "my-gpu"}]


def claiming(name: str) -> dict[str, Any]:
    raw = pod_dict(name, requests={"cpu": "100m"})
    raw["spec"]["resourceClaims"] = CLAIMS
    return raw


def test_a_pod_with_claims_is_refused_unresolvable() -> None:
    plugin = DynamicResources(None, None)
    pod = PodInfo.parse(claiming("trainer"))
    result, status = plugin.pre_filter(CycleState(), pod, [])
    assert result is None and status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ERR_CLAIMS_NOT_ALLOCATED
    # Each refusal is its own status: the runtime labels it with the plugin.
    _, again = plugin.pre_filter(CycleState(), pod, [])
    assert again is not status


@pytest.mark.parametrize("claims", [None, []])
def test_every_other_pod_is_skipped(claims: list[Any] | None) -> None:
    raw = pod_dict("web")
    if claims is not None:
        raw["spec"]["resourceClaims"] = claims
    result, status = DynamicResources(None, None).pre_filter(CycleState(), PodInfo.parse(raw), [])
    assert result is None and status is not None and status.is_skip()


def test_no_cluster_event_requeues_a_refused_pod() -> None:
    assert DynamicResources(None, None).events_to_register() == ()


def test_the_default_profile_leaves_a_claiming_pod_pending_and_schedules_the_rest() -> None:
    placed = run(
        node_dict("n1"),
        node_dict("n2"),
        claiming("trainer"),
        pod_dict("web", requests={"cpu": "100m"}),
    )
    assert placed["web"].status == "Scheduled"
    trainer = placed["trainer"]
    assert (trainer.status, trainer.node) == ("Unschedulable", "")
    assert trainer.message.startswith(f"0/2 nodes are available: {ERR_CLAIMS_NOT_ALLOCATED}.")


# -- DynamicResourcesArgs --------------------------------------------------------------------


def test_default_args_are_v137s() -> None:
    args = DynamicResourcesArgs()
    assert (args.filter_timeout, args.binding_timeout) == ("10s", "10m0s")
    assert DynamicResourcesArgs.model_validate({"filterTimeout": None}) == args
    assert args.model_dump(by_alias=True) == {"filterTimeout": "10s", "bindingTimeout": "10m0s"}


@pytest.mark.parametrize(
    "args",
    [
        {"filterTimeout": "10s", "bindingTimeout": "10m0s"},  # valid args (default)
        {},
        {"bindingTimeout": "30s"},  # valid BindingTimeout
        {"filterTimeout": "0s"},  # zero disables the timeout
        {"bindingTimeout": "1s"},
    ],
)
def test_valid_args(args: dict[str, Any]) -> None:
    DynamicResourcesArgs.model_validate(args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"filterTimeout": "-1s"}, "filterTimeout: Invalid value: -1s: must be zero or positive"),
        ({"bindingTimeout": "0s"}, "bindingTimeout: Invalid value: 0s: must be at least 1 second"),
        (
            {"bindingTimeout": "-1s"},
            "bindingTimeout: Invalid value: -1s: must be at least 1 second",
        ),
        ({"bindingTimeout": "999ms"}, "must be at least 1 second"),
        ({"filterTimeout": "ten seconds"}, "invalid duration 'ten seconds'"),
        ({"filterTimeout": 10}, "Input should be a valid string"),
        ({"timeout": "10s"}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        DynamicResourcesArgs.model_validate(args)
    assert message in str(info.value)
