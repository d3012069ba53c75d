"""``resolve`` with a catalog mirroring the built-ins: defaults, merge, expansion, checks."""

from __future__ import annotations

from typing import Any

import pytest

from config_fakes import (
    CATALOG,
    CustomSortArgs,
    DefaultPreemptionArgs,
    resolve_profile,
    resolve_spec,
)
from multisched.config import ConfigError, ResolvedConfig

DEFAULT_FILTER = (
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
)
DEFAULT_PRE_SCORE = (
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
)
DEFAULT_SCORE = (*DEFAULT_PRE_SCORE, "ImageLocality")
DEFAULT_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def one(plugins: dict[str, Any] | None = None, **profile: Any) -> Any:
    body = {"schedulerName": "my-scheduler", **profile}
    if plugins is not None:
        body["plugins"] = plugins
    return resolve_profile(body).profiles[0]


def problems(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        resolve_spec(spec)
    return [str(p) for p in info.value.problems]


def profile_problems(plugins: dict[str, Any] | None = None, **profile: Any) -> list[str]:
    body = {"schedulerName": "p", **profile}
    if plugins is not None:
        body["plugins"] = plugins
    return problems({"profiles": [body]})


def named(*names: str, weights: dict[str, int] | None = None) -> list[dict[str, Any]]:
    weights = weights or {}
    return [{"name": n, **({"weight": weights[n]} if n in weights else {})} for n in names]


def test_default_profile_matches_upstream_expanded_plugins() -> None:
    prof = one()
    assert prof.plugins == {
        "preEnqueue": ("SchedulingGates",),
        "queueSort": ("PrioritySort",),
        "preFilter": (
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ),
        "filter": DEFAULT_FILTER,
        "postFilter": ("DefaultPreemption",),
        "preScore": DEFAULT_PRE_SCORE,
        "score": DEFAULT_SCORE,
        "reserve": ("VolumeBinding",),
        "permit": (),
        "preBind": ("VolumeBinding",),
        "bind": ("DefaultBinder",),
        "postBind": (),
    }
    assert prof.score_weights == DEFAULT_WEIGHTS


def test_default_args_filled_for_plugins_that_run() -> None:
    prof = one()
    assert prof.plugin_args["DefaultPreemption"] == DefaultPreemptionArgs()
    assert set(prof.plugin_args) == {"DefaultPreemption", "InterPodAffinity"}


def test_disable_all_score_plugins() -> None:
    prof = one({"score": {"disabled": [{"name": "*"}]}})
    assert prof.plugins["score"] == ()
    assert prof.score_weights == {}
    assert prof.plugins["preScore"] == DEFAULT_PRE_SCORE  # other points untouched


def test_disable_all_then_enable_one_at_score() -> None:
    prof = one(
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": named("ImageLocality", weights={"ImageLocality": 4}),
            }
        }
    )
    assert prof.plugins["score"] == ("ImageLocality",)
    assert prof.score_weights == {"ImageLocality": 4}


def test_reenable_default_at_score_takes_weight_and_keeps_order() -> None:
    prof = one({"score": {"enabled": named("TaintToleration", weights={"TaintToleration": 5})}})
    assert prof.plugins["score"] == DEFAULT_SCORE
    assert prof.score_weights == {**DEFAULT_WEIGHTS, "TaintToleration": 5}


def test_reenabled_default_moves_to_the_front_as_upstream() -> None:
    # expandMultiPointPlugins part 1: plugins overridden at the point come first.
    prof = one({"score": {"enabled": named("ImageLocality", weights={"ImageLocality": 5})}})
    assert prof.plugins["score"] == ("ImageLocality", *DEFAULT_SCORE[:-1])
    assert prof.score_weights["ImageLocality"] == 5


def test_disabled_and_reenabled_at_point_goes_last() -> None:
    prof = one(
        {
            "score": {
                "disabled": named("TaintToleration"),
                "enabled": named("TaintToleration", weights={"TaintToleration": 5}),
            }
        }
    )
    assert prof.plugins["score"] == (*DEFAULT_SCORE[1:], "TaintToleration")
    assert prof.score_weights["TaintToleration"] == 5


def test_disable_one_default_at_a_point() -> None:
    prof = one({"score": {"disabled": named("TaintToleration")}})
    assert prof.plugins["score"] == DEFAULT_SCORE[1:]
    assert prof.plugins["filter"] == DEFAULT_FILTER
    assert "TaintToleration" not in prof.score_weights


def test_custom_plugin_at_a_point_is_appended() -> None:
    prof = one({"filter": {"enabled": named("CustomFilter")}})
    assert prof.plugins["filter"] == (*DEFAULT_FILTER, "CustomFilter")


def test_explicit_filter_order_comes_first() -> None:
    # The seeds' example: filter enabled [NodeResourcesFit, NodeName], TaintToleration disabled.
    prof = one(
        {
            "filter": {
                "enabled": named("NodeResourcesFit", "NodeName"),
                "disabled": named("TaintToleration"),
            }
        }
    )
    assert prof.plugins["filter"] == (
        "NodeResourcesFit",
        "NodeName",
        "NodeUnschedulable",
        "NodeAffinity",
        "NodePorts",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    )


def test_multipoint_custom_plugin_lands_on_its_points() -> None:
    prof = one(
        {
            "multiPoint": {
                "enabled": named("CustomScore", "CustomFilter", weights={"CustomScore": 7})
            }
        }
    )
    assert prof.plugins["preScore"] == (*DEFAULT_PRE_SCORE, "CustomScore")
    assert prof.plugins["score"] == (*DEFAULT_SCORE, "CustomScore")
    assert prof.plugins["filter"] == (*DEFAULT_FILTER, "CustomFilter")
    assert prof.score_weights["CustomScore"] == 7


def test_multipoint_reweights_a_default_in_place() -> None:
    prof = one({"multiPoint": {"enabled": named("ImageLocality", weights={"ImageLocality": 9})}})
    assert prof.plugins["score"] == DEFAULT_SCORE
    assert prof.score_weights["ImageLocality"] == 9


def test_score_weight_wins_over_multipoint_weight() -> None:
    prof = one(
        {
            "multiPoint": {"enabled": named("CustomScore", weights={"CustomScore": 7})},
            "score": {"enabled": named("CustomScore", weights={"CustomScore": 2})},
        }
    )
    assert prof.score_weights["CustomScore"] == 2
    assert prof.plugins["score"][0] == "CustomScore"


def test_multipoint_disabled_default_is_gone_everywhere() -> None:
    prof = one({"multiPoint": {"disabled": named("NodeAffinity")}})
    assert all("NodeAffinity" not in names for names in prof.plugins.values())


def test_replace_queue_sort_and_binder() -> None:
    prof = one(
        {
            "queueSort": {"enabled": named("CustomSort"), "disabled": named("*")},
            "bind": {"enabled": named("CustomBinder"), "disabled": named("DefaultBinder")},
        }
    )
    assert prof.plugins["queueSort"] == ("CustomSort",)
    assert prof.plugins["bind"] == ("CustomBinder",)
    assert prof.plugin_args["CustomSort"] == CustomSortArgs()


def test_plugin_args_validated_and_only_for_running_plugins() -> None:
    prof = one(
        {"postFilter": {"disabled": named("*")}},
        pluginConfig=[{"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 20}}],
    )
    assert "DefaultPreemption" not in prof.plugin_args
    prof = one(
        pluginConfig=[
            {
                "name": "DefaultPreemption",
                "args": {
                    "kind": "DefaultPreemptionArgs",
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "minCandidateNodesPercentage": 20,
                },
            }
        ]
    )
    assert prof.plugin_args["DefaultPreemption"] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=20
    )


def test_disabling_unsupported_plugin_is_a_noop() -> None:
    prof = one(
        {
            "filter": {"disabled": named("EBSLimits")},
            "multiPoint": {"disabled": named("GCEPDLimits")},
        }
    )
    assert prof.plugins["filter"] == DEFAULT_FILTER


def test_global_settings_resolved() -> None:
    cfg: ResolvedConfig = resolve_spec(
        {
            "percentageOfNodesToScore": 30,
            "podInitialBackoffSeconds": 2,
            "podMaxBackoffSeconds": 20,
            "profiles": [{"schedulerName": "a", "percentageOfNodesToScore": 50}],
        }
    )
    assert cfg.percentage_of_nodes_to_score == 30
    assert cfg.profiles[0].percentage_of_nodes_to_score == 50
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2.0, 20.0)


def test_spec_defaults() -> None:
    cfg = resolve_spec({"profiles": [{}]})
    assert cfg.profiles[0].scheduler_name == "default-scheduler"
    assert cfg.percentage_of_nodes_to_score == 0
    assert cfg.profile("default-scheduler") is cfg.profiles[0]


def test_several_profiles_with_same_queue_sort() -> None:
    cfg = resolve_spec(
        {
            "profiles": [
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"score": {"disabled": named("*")}}},
            ]
        }
    )
    assert [p.scheduler_name for p in cfg.profiles] == ["a", "b"]
    assert cfg.profiles[1].plugins["score"] == ()


# --- problems -----------------------------------------------------------------------------


def test_unknown_plugin_with_suggestion() -> None:
    assert profile_problems({"score": {"enabled": named("ImageLocality", "TaintTolerations")}}) == [
        "profiles[0](p).plugins.score.enabled[1](TaintTolerations): unknown plugin "
        '"TaintTolerations" (did you mean "TaintToleration"?)'
    ]


@pytest.mark.parametrize("point", ["multiPoint", "filter"])
def test_unsupported_volume_plugin(point: str) -> None:
    assert profile_problems({point: {"enabled": named("EBSLimits")}}) == [
        f"profiles[0](p).plugins.{point}.enabled[0](EBSLimits): plugin EBSLimits is not "
        "supported by multisched (in-tree volume limits are counted by NodeVolumeLimits through "
        "CSI migration)"
    ]


def test_selector_spread_is_refused_as_v1_refuses_it() -> None:
    """Upstream ``invalidPluginsByVersion``: SelectorSpread may not be enabled in v1 (kube-
    scheduler v1.28: 'Invalid value: "SelectorSpread": was invalid in version "v1"');
    disabling it stays harmless."""
    assert profile_problems({"score": {"enabled": named("SelectorSpread")}}) == [
        "profiles[0](p).plugins.score.enabled[0](SelectorSpread): plugin SelectorSpread was "
        "removed from KubeSchedulerConfiguration v1 (kube-scheduler v1.28 refuses it too); "
        "PodTopologySpread's default constraints spread the pods of a Service or controller "
        "in its place"
    ]
    assert one({"score": {"disabled": named("SelectorSpread")}}).plugins["score"]


def test_unsupported_plugin_config() -> None:
    assert profile_problems(pluginConfig=[{"name": "CinderLimits", "args": {}}]) == [
        "profiles[0](p).pluginConfig[0](CinderLimits): plugin CinderLimits is not "
        "supported by multisched (in-tree volume limits are counted by NodeVolumeLimits "
        "through CSI migration)"
    ]


def test_plugin_enabled_at_point_it_does_not_implement() -> None:
    assert profile_problems({"score": {"enabled": named("NodeName")}}) == [
        'profiles[0](p).plugins.score.enabled[0](NodeName): plugin "NodeName" does not extend '
        "score plugin (it implements: filter)"
    ]


def test_multipoint_plugin_not_implementing_a_point_is_skipped() -> None:
    prof = one({"multiPoint": {"enabled": named("CustomFilter")}})
    assert "CustomFilter" not in prof.plugins["score"]


def test_duplicate_at_a_point() -> None:
    assert profile_problems({"filter": {"enabled": named("CustomFilter", "CustomFilter")}}) == [
        'profiles[0](p).plugins.filter.enabled[1](CustomFilter): plugin "CustomFilter" already '
        "registered as filter plugin"
    ]


def test_two_queue_sort_plugins() -> None:
    assert profile_problems({"queueSort": {"enabled": named("CustomSort")}}) == [
        "profiles[0](p).plugins.queueSort: only one queue sort plugin required for profile with "
        'scheduler name "p", but got 2'
    ]


def test_no_queue_sort_plugin() -> None:
    assert profile_problems({"queueSort": {"disabled": named("*")}}) == [
        "profiles[0](p).plugins.queueSort: only one queue sort plugin required for profile with "
        'scheduler name "p", but got 0'
    ]


def test_no_bind_plugin() -> None:
    assert profile_problems({"bind": {"disabled": named("DefaultBinder")}}) == [
        "profiles[0](p).plugins.bind: at least one bind plugin is needed for profile with "
        'scheduler name "p"'
    ]


def test_negative_weight() -> None:
    assert profile_problems(
        {"score": {"enabled": named("ImageLocality", weights={"ImageLocality": -1})}}
    ) == [
        "profiles[0](p).plugins.score.enabled[0](ImageLocality).weight: weight must not be "
        "negative, got -1 (0 means the default, 1; to turn a plugin off, list it under disabled)"
    ]


@pytest.mark.parametrize("point", ["score", "multiPoint"])
def test_weight_zero_is_the_default_weight_as_upstream(point: str) -> None:
    """getValidScoreWeights: a weight of 0 is taken as 1 (kube-scheduler --write-config-to
    writes ``weight: 0`` for every plugin it has no weight for)."""
    prof = one({point: {"enabled": named("CustomScore", weights={"CustomScore": 0})}})
    assert "CustomScore" in prof.plugins["score"]
    assert prof.score_weights["CustomScore"] == 1


def test_weight_zero_is_accepted_where_weights_are_unused() -> None:
    # What kube-scheduler v1.37.2 writes for explicitly configured points.
    prof = one(
        {
            "filter": {"enabled": named("CustomFilter", weights={"CustomFilter": 0})},
            "score": {"disabled": [{"name": "ImageLocality", "weight": 0}]},
        }
    )
    assert prof.plugins["filter"] == (*DEFAULT_FILTER, "CustomFilter")
    assert "ImageLocality" not in prof.plugins["score"]


def test_a_weight_under_disabled_is_refused() -> None:
    assert profile_problems({"score": {"disabled": [{"name": "ImageLocality", "weight": 2}]}}) == [
        "profiles[0](p).plugins.score.disabled[0](ImageLocality).weight: weight is not used "
        "under disabled; remove it"
    ]


def test_weight_at_a_point_without_weights() -> None:
    assert profile_problems(
        {"filter": {"enabled": named("CustomFilter", weights={"CustomFilter": 2})}}
    ) == [
        "profiles[0](p).plugins.filter.enabled[0](CustomFilter).weight: weight is only used at "
        "score and multiPoint, not at filter; remove it"
    ]


def test_plugin_config_problems() -> None:
    got = profile_problems(
        pluginConfig=[
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 200}},
            {"name": "DefaultPreemption", "args": {}},
            {"name": "NoSuchPlugin", "args": {}},
            {"name": "NodeName", "args": {"x": 1}},
            {"name": "InterPodAffinity", "args": {"hardPodAfinityWeight": 1}},
        ]
    )
    assert got == [
        "profiles[0](p).pluginConfig[0](DefaultPreemption).args.minCandidateNodesPercentage: "
        "Input should be less than or equal to 100",
        "profiles[0](p).pluginConfig[1](DefaultPreemption): repeated config for plugin "
        "DefaultPreemption (already at pluginConfig[0])",
        'profiles[0](p).pluginConfig[2](NoSuchPlugin): unknown plugin "NoSuchPlugin"',
        "profiles[0](p).pluginConfig[3](NodeName).args: plugin NodeName takes no args",
        "profiles[0](p).pluginConfig[4](InterPodAffinity).args.hardPodAfinityWeight: unknown "
        'field (did you mean "hardPodAffinityWeight"?)',
    ]


def test_plugin_config_wrong_kind() -> None:
    assert profile_problems(
        pluginConfig=[{"name": "DefaultPreemption", "args": {"kind": "NodeAffinityArgs"}}]
    ) == [
        "profiles[0](p).pluginConfig[0](DefaultPreemption).args.kind: expected "
        "DefaultPreemptionArgs, got 'NodeAffinityArgs'"
    ]


def test_duplicate_scheduler_name() -> None:
    assert problems({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}) == [
        'profiles[1](a).schedulerName: duplicate schedulerName "a" (also profiles[0])'
    ]


def test_several_profiles_need_explicit_names() -> None:
    assert problems({"profiles": [{"schedulerName": "a"}, {}]}) == [
        "profiles[1].schedulerName: required when there are several profiles"
    ]


def test_profiles_disagree_on_queue_sort() -> None:
    assert problems(
        {
            "profiles": [
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": named("CustomSort"), "disabled": named("*")}
                    },
                },
            ]
        }
    ) == [
        "profiles[1](b).plugins.queueSort: has to match for all profiles: profiles[0](a) sorts "
        "with ['PrioritySort'], this profile with ['CustomSort']"
    ]


def test_profiles_disagree_on_queue_sort_args() -> None:
    sort = {"queueSort": {"enabled": named("CustomSort"), "disabled": named("*")}}
    assert problems(
        {
            "profiles": [
                {"schedulerName": "a", "plugins": sort},
                {
                    "schedulerName": "b",
                    "plugins": sort,
                    "pluginConfig": [{"name": "CustomSort", "args": {"reverse": True}}],
                },
            ]
        }
    ) == [
        "profiles[1](b).pluginConfig: args of queue sort plugin CustomSort have to match for all "
        "profiles (they differ from profiles[0](a))"
    ]


def test_default_plugin_missing_from_catalog() -> None:
    cat = {k: v for k, v in CATALOG.items() if k != "ImageLocality"}
    with pytest.raises(ConfigError) as info:
        resolve_spec({"profiles": [{"schedulerName": "a"}]}, cat)
    assert [str(p) for p in info.value.problems] == [
        'profiles[0](a).plugins.multiPoint: default plugin "ImageLocality" is not registered; '
        "disable it under plugins.multiPoint.disabled"
    ]
    resolve_spec(
        {
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {"multiPoint": {"disabled": named("ImageLocality")}},
                }
            ]
        },
        cat,
    )


def test_all_problems_collected_in_one_error() -> None:
    got = problems(
        {
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {
                        "score": {"enabled": named("Nope")},
                        "bind": {"disabled": named("*")},
                    },
                },
                {"schedulerName": "a", "pluginConfig": [{"name": "Other"}]},
            ]
        }
    )
    assert got == [
        'profiles[1](a).schedulerName: duplicate schedulerName "a" (also profiles[0])',
        'profiles[0](a).plugins.score.enabled[0](Nope): unknown plugin "Nope"',
        "profiles[0](a).plugins.bind: at least one bind plugin is needed for profile with "
        'scheduler name "a"',
        'profiles[1](a).pluginConfig[0](Other): unknown plugin "Other"',
    ]


def test_config_error_str_is_one_line_per_problem() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_spec(
            {
                "profiles": [
                    {"schedulerName": "a", "plugins": {"score": {"enabled": named("X", "Y")}}}
                ]
            }
        )
    assert str(info.value).splitlines() == [
        'profiles[0](a).plugins.score.enabled[0](X): unknown plugin "X"',
        'profiles[0](a).plugins.score.enabled[1](Y): unknown plugin "Y"',
    ]
