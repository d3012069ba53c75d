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
                    {"maxSkew": 1.0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            f"{ARGS}(PodTopologySpread).args.defaultConstraints[0].maxSkew: must be an integer, "
            "got 1.0",
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
