"""Built-in plugin args are decoded strictly, as kube-scheduler's strict decoder does: a
SchedulerProfile that passes the CRD schema still gets ``maxSkew: "1"`` refused."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.config import ConfigError, parse_scheduler_profile_spec, resolve
from multisched.scheduler import default_registry


def problems(name: str, args: dict[str, Any]) -> list[str]:
    spec = {"profiles": [{"schedulerName": "s", "pluginConfig": [{"name": name, "args": args}]}]}
    with pytest.raises(ConfigError) as info:
        resolve(parse_scheduler_profile_spec(spec), default_registry())
    return [str(p) for p in info.value.problems]


ARGS = "profiles[0](s).pluginConfig[0]"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": "1", "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            f"{ARGS}(PodTopologySpread).args.defaultConstraints[0].maxSkew: must be an integer, "
            "got '1'",
        ),
        (
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1.5, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            f"{ARGS}(PodTopologySpread).args.defaultConstraints[0].maxSkew: must be an integer, "
            "got 1.5",
        ),
        (
            "NodeAffinity",
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "In", "values": "xyz"}]}
                        ]
                    }
                }
            },
            f"{ARGS}(NodeAffinity).args.addedAffinity.requiredDuringSchedulingIgnoredDuring"
            "Execution.nodeSelectorTerms[0].matchExpressions[0].values: must be a list, got 'xyz'",
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeight": "5"},
            f"{ARGS}(InterPodAffinity).args.hardPodAffinityWeight: must be an integer, got '5'",
        ),
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": "1"}],
                }
            },
            f"{ARGS}(NodeResourcesFit).args.scoringStrategy.resources[0](cpu).weight: must be an "
            "integer, got '1'",
        ),
    ],
)
def test_string_numbers_and_strings_for_lists_are_refused(
    name: str, args: dict[str, Any], expected: str
) -> None:
    assert problems(name, args) == [expected]


@pytest.mark.parametrize("value", [1.0, 2e0])
def test_a_whole_float_is_an_int_as_kube_scheduler_reads_it(value: float) -> None:
    """kube-scheduler v1.28 turns its YAML into JSON before decoding, and JSON writes 1.0 as
    1: ``maxSkew: 1.0`` runs there (checked with the binary), ``maxSkew: 1.5`` is refused."""
    constraint = {"maxSkew": value, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    args = {"defaultingType": "List", "defaultConstraints": [constraint]}
    spec = {
        "profiles": [
            {"schedulerName": "s", "pluginConfig": [{"name": "PodTopologySpread", "args": args}]}
        ]
    }
    resolved = resolve(parse_scheduler_profile_spec(spec), default_registry())
    assert resolved.profiles[0].scheduler_name == "s"
