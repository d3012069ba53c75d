"""Opportunistic batching after upstream framework/runtime/batch_test.go (TestBatchBasic,
TestBatchRescore) and kube-scheduler framework/signers_test.go, plus the rules ours adds
to keep every placement of the one-by-one path."""

from __future__ import annotations

import random
from typing import Any

import pytest

from builders import make_pod, node_dict
from fakes import ALL, profile
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import CycleState, FitError, Framework, Registry, Status
from multisched.framework.recorder import NullRecorder
from multisched.operator.metrics import Metrics
from multisched.scheduler import Algorithm, Scheduler, SchedulingError, default_registry
from multisched.scheduler import batching as b


class Recorder(NullRecorder):
    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.flushes: list[str] = []

    def batch_attempt(self, result: str) -> None:
        self.attempts.append(result)

    def batch_flush(self, reason: str) -> None:
        self.flushes.append(reason)


class FreeCpuScore:
    """Scores a node by its free CPU (least allocated): a placement lowers its node's score."""

    name = "FreeCpuScore"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        free = node.allocatable.milli_cpu - node.requested.milli_cpu
        return max(0, min(100, free // 100))


class FlakyFilter:
    """Fails with an error status at the nodes named in ``error_at``."""

    name = "FlakyFilter"
    error_at: set[str] = set()

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.name in FlakyFilter.error_at:
            return Status.error("injected filter error")
        return None


@pytest.fixture(autouse=True)
def _signable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test plugins sign pods as the resource plugins do."""
    signers = dict(b.SIGNERS)
    for name in ("CpuFit", "LabelScore", "OnlyNamed", "FreeCpuScore", "FlakyFilter"):
        signers[name] = b.SIGNERS["NodeResourcesFit"]
    monkeypatch.setattr(b, "SIGNERS", signers)
    FlakyFilter.error_at = set()


def _setup(
    nodes: dict[str, tuple[str, int]], score: str = "LabelScore", percentage: int | None = None
) -> tuple[Cache, Framework, Algorithm, Recorder]:
    """``nodes``: name -> (cpu, score label)."""
    cache = Cache()
    for name, (cpu, s) in nodes.items():
        cache.add_node(node_dict(name, cpu=cpu, labels={"score": str(s)}))
    prof = profile(score=(score,), percentage=percentage)
    prof.plugins["filter"] = ("CpuFit", "FlakyFilter")
    fwk = Framework(prof, Registry([*ALL, FreeCpuScore, FlakyFilter]), cache.snapshot)
    rec = Recorder()
    fwk.recorder = rec
    return cache, fwk, Algorithm(rng=random.Random(1)), rec


def _place(cache: Cache, fwk: Framework, algo: Algorithm, pod: PodInfo) -> str:
    host = algo.schedule_pod(fwk, CycleState(), pod, cache.snapshot).suggested_host
    cache.assume_pod(pod, host)
    return host


def _pod(name: str, cpu: str = "1", **kw: Any) -> PodInfo:
    return make_pod(name, requests={"cpu": cpu}, **kw)


ONE_EACH = {"n1": ("1", 30), "n2": ("1", 20), "n3": ("1", 50)}


# -- TestBatchBasic ----------------------------------------------------------------------


def test_a_second_pod_with_the_same_signature_gets_a_hint() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    assert _place(cache, fwk, algo, _pod("p1")) == "n3"
    assert _place(cache, fwk, algo, _pod("p2")) == "n1"
    assert rec.attempts == ["no_hint", "hint_used"]
    assert algo.batch(fwk).batched_pods == 1
    assert rec.flushes == []


def test_a_second_pod_with_a_different_signature_does_not_get_a_hint() -> None:
    cache, fwk, algo, rec = _setup({**ONE_EACH, "n1": ("2", 30)})
    assert _place(cache, fwk, algo, _pod("p1")) == "n3"
    assert _place(cache, fwk, algo, _pod("p2", cpu="2")) == "n1"
    assert rec.attempts == ["no_hint", "no_hint"]
    assert rec.flushes == ["pod_incompatible", "empty_list"]  # n1 was p2's only node


def test_a_pod_does_not_get_a_hint_when_the_previous_pod_was_not_scheduled() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    with pytest.raises(FitError):
        _place(cache, fwk, algo, _pod("big", cpu="2"))
    assert _place(cache, fwk, algo, _pod("p1")) == "n3"
    assert rec.attempts == ["no_hint", "no_hint"]


def test_a_single_feasible_node_leaves_an_empty_list() -> None:
    cache, fwk, algo, rec = _setup({"n1": ("1", 30), "n2": ("0", 90)})
    assert _place(cache, fwk, algo, _pod("p1")) == "n1"
    assert rec.flushes == ["empty_list"]
    with pytest.raises(FitError):
        _place(cache, fwk, algo, _pod("p2"))
    assert rec.attempts == ["no_hint", "no_hint"]


def test_a_pod_does_not_get_a_hint_after_another_profiles_pod() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    other = Framework(profile("other"), Registry(ALL), cache.snapshot)
    assert _place(cache, fwk, algo, _pod("p1")) == "n3"
    assert _place(cache, other, algo, _pod("o1")) == "n1"
    assert _place(cache, fwk, algo, _pod("p2")) == "n2"
    assert rec.flushes == ["pod_skipped", "empty_list"]
    assert algo.batch(fwk).batched_pods == 0


def test_a_pod_uses_the_batch_and_leaves_the_rest_to_the_next_pod() -> None:
    cache, fwk, algo, rec = _setup({**ONE_EACH, "n4": ("1", 10)})
    hosts = [_place(cache, fwk, algo, _pod(f"p{i}")) for i in range(4)]
    assert hosts == ["n3", "n1", "n2", "n4"]
    assert rec.attempts == ["no_hint", "hint_used", "hint_used", "hint_used"]
    st = algo.batch(fwk).state
    assert st is not None
    assert st.live == []  # the batch is used up: the next pod gets no hint, silently
    with pytest.raises(FitError):
        _place(cache, fwk, algo, _pod("p5"))
    assert rec.attempts[-1] == "no_hint"
    assert rec.flushes == []


def test_a_second_pod_with_a_nominated_node_does_not_get_a_hint() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    _place(cache, fwk, algo, _pod("p1"))
    pod = _pod("p2", status={"nominatedNodeName": "n2"})
    assert _place(cache, fwk, algo, pod) == "n2"  # the nominated node, tried first
    assert rec.flushes == ["pod_nominated", "empty_list"]


# -- TestBatchRescore --------------------------------------------------------------------


def test_the_rescored_node_wins() -> None:
    """The last pod's node still fits and still scores best: it gets the next pod too."""
    cache, fwk, algo, rec = _setup({"n1": ("1", 50), "n2": ("2", 90)})
    assert _place(cache, fwk, algo, _pod("p1")) == "n2"
    assert _place(cache, fwk, algo, _pod("p2")) == "n2"
    assert rec.attempts == ["no_hint", "hint_used"]


def test_the_rescored_node_loses() -> None:
    """Its score fell with the pod placed there: the cached node wins."""
    cache, fwk, algo, rec = _setup({"n1": ("3", 0), "n2": ("4", 0)}, score="FreeCpuScore")
    assert _place(cache, fwk, algo, _pod("p1", cpu="2")) == "n2"
    assert _place(cache, fwk, algo, _pod("p2", cpu="2")) == "n1"
    assert rec.attempts == ["no_hint", "hint_used"]


def test_a_filter_error_gives_no_hint() -> None:
    cache, fwk, algo, rec = _setup({**ONE_EACH, "n3": ("2", 50)})
    _place(cache, fwk, algo, _pod("p1"))
    FlakyFilter.error_at = {"n3"}
    with pytest.raises(SchedulingError, match="injected filter error"):
        _place(cache, fwk, algo, _pod("p2"))
    assert rec.flushes == ["filter_error"]
    assert rec.attempts == ["no_hint", "no_hint"]


def test_the_chosen_node_missing_gives_no_hint() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    _place(cache, fwk, algo, _pod("p1"))
    cache.remove_node("n3")
    assert _place(cache, fwk, algo, _pod("p2")) == "n1"
    assert rec.flushes == ["node_missing"]


def test_a_cached_node_missing_gives_no_hint() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    _place(cache, fwk, algo, _pod("p1"))
    cache.remove_node("n1")
    assert _place(cache, fwk, algo, _pod("p2")) == "n2"
    assert rec.flushes[0] == "node_missing"


def test_an_expired_batch_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(b, "perf_counter", lambda: now[0])
    cache, fwk, algo, rec = _setup(ONE_EACH)
    _place(cache, fwk, algo, _pod("p1"))
    now[0] += b.MAX_BATCH_AGE + 0.01
    assert _place(cache, fwk, algo, _pod("p2")) == "n1"
    assert rec.flushes == ["expired"]


# -- ours: what keeps each placement the one-by-one path's -------------------------------


def test_a_change_at_another_node_ends_the_batch() -> None:
    """n1 is made the best node after p1 is placed: the batch's scores are stale, and the
    next pod goes where a full cycle sends it."""
    cache, fwk, algo, rec = _setup({**ONE_EACH, "n4": ("1", 10)})
    assert _place(cache, fwk, algo, _pod("p1")) == "n3"
    cache.add_node(node_dict("n4", cpu="1", labels={"score": "99"}))
    assert _place(cache, fwk, algo, _pod("p2")) == "n4"
    assert rec.flushes == ["cluster_changed"]


def test_a_partial_search_is_not_kept() -> None:
    """Searches that stop early start where the last one stopped: a kept list would offer
    nodes a full cycle would not have searched."""
    nodes = {f"n{i:03d}": ("1", i % 7) for i in range(200)}
    cache, fwk, algo, rec = _setup(nodes, percentage=10)
    _place(cache, fwk, algo, _pod("p1"))
    assert rec.flushes == ["partial_search"]
    assert algo.batch(fwk).state is None


def test_explain_cycles_do_not_batch() -> None:
    cache, fwk, algo, rec = _setup(ONE_EACH)
    _place(cache, fwk, algo, _pod("p1"))
    result = algo.schedule_pod(fwk, CycleState(), _pod("p2"), cache.snapshot, explain=True)
    assert result.explain is not None and len(result.explain.verdicts) == 3
    assert rec.attempts == ["no_hint"]


def test_batching_off_records_nothing() -> None:
    cache, fwk, _, rec = _setup(ONE_EACH)
    algo = Algorithm(rng=random.Random(1), opportunistic_batching=False)
    assert [_place(cache, fwk, algo, _pod(f"p{i}")) for i in range(3)] == ["n3", "n1", "n2"]
    assert rec.attempts == rec.flushes == []


# -- signers (signers_test.go) and SignPod -----------------------------------------------


def _signed(**spec: Any) -> PodInfo:
    return PodInfo.parse({"metadata": {"name": "p"}, "spec": {"containers": [], **spec}})


@pytest.mark.parametrize(
    ("containers", "init", "want"),
    [
        ([], [], []),
        ([{"ports": [{"containerPort": 80}]}], [], []),
        ([{"ports": [{"hostPort": 8080}]}], [], [8080]),
        (
            [{"ports": [{"hostPort": 80}]}, {"ports": [{"hostPort": 443}, {"hostPort": 80}]}],
            [{"ports": [{"hostPort": 9090}]}],
            [80, 443, 9090],
        ),
    ],
    ids=["no containers", "no host ports", "one host port", "unsorted with duplicates"],
)
def test_host_ports_signer(containers: Any, init: Any, want: list[int]) -> None:
    pod = _signed(containers=containers, initContainers=init)
    assert b.host_ports_signer(pod) == want


def test_tolerations_signer_orders_by_key_then_value() -> None:
    assert b.tolerations_signer(_signed()) == []
    pod = _signed(
        tolerations=[
            {"key": "b", "value": "2"},
            {"key": "a", "value": "1"},
            {"key": "b", "value": "1"},
        ]
    )
    assert [t[:3:2] for t in b.tolerations_signer(pod)] == [["a", "1"], ["b", "1"], ["b", "2"]]


def test_volumes_signer_leaves_out_configmaps_and_secrets_and_sorts() -> None:
    cm = {"name": "v2", "configMap": {"name": "cm"}}
    secret = {"name": "v4", "secret": {"secretName": "s"}}
    assert b.volumes_signer(_signed()) == []
    assert b.volumes_signer(_signed(volumes=[cm, secret])) == []
    mixed = [{"name": "v1", "hostPath": {"path": "/tmp"}}, cm, {"name": "v3", "emptyDir": {}}]
    assert b.volumes_signer(_signed(volumes=mixed)) == [
        '{"emptyDir":{}}',
        '{"hostPath":{"path":"/tmp"}}',
    ]


def test_node_affinity_signer_is_order_insensitive() -> None:
    assert b.node_affinity_signer(_signed()) is None
    empty = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    assert b.node_affinity_signer(_signed(affinity=empty)) == {"Required": [], "Preferred": []}

    def term(key: str, values: list[str]) -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}

    def aff(terms: list[dict[str, Any]], prefs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms},
                "preferredDuringSchedulingIgnoredDuringExecution": prefs,
            }
        }

    one = aff(
        [term("k2", ["v2", "v1"]), term("kk2", ["v2", "kv1"])],
        [
            {"weight": 3, "preference": term("p", ["b", "a"])},
            {"weight": 1, "preference": term("q", ["x"])},
        ],
    )
    other = aff(
        [term("kk2", ["kv1", "v2"]), term("k2", ["v1", "v2"])],
        [
            {"weight": 1, "preference": term("q", ["x"])},
            {"weight": 3, "preference": term("p", ["a", "b"])},
        ],
    )
    signed = b.node_affinity_signer(_signed(affinity=one))
    assert signed == b.node_affinity_signer(_signed(affinity=other))
    assert signed is not None
    assert signed["Required"][0] == (
        '{"MatchExpressions":["{\\"key\\":\\"k2\\",\\"operator\\":\\"In\\",'
        '\\"values\\":[\\"v1\\",\\"v2\\"]}"],"MatchFields":[]}'
    )


def _default_plugins(pts_args: dict[str, Any] | None = None) -> Framework:
    prof: dict[str, Any] = {"schedulerName": "s"}
    if pts_args is not None:
        prof["pluginConfig"] = [{"name": "PodTopologySpread", "args": pts_args}]
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [prof]}), registry)
    return Scheduler(config, registry, cache=Cache()).profiles["s"]


def _replica(name: str, **kw: Any) -> PodInfo:
    kw.setdefault("requests", {"cpu": "100m"})
    return make_pod(name, labels={"app": "web"}, **kw)


def test_sign_pod_replicas_share_a_signature() -> None:
    plugins = b.batchable_plugins(_default_plugins({"defaultingType": "List"}))
    cm = [{"name": "cfg", "configMap": {"name": "x"}}]
    first = b.sign_pod(plugins, _replica("web-1", volumes=cm))
    assert first is not None
    assert b.sign_pod(plugins, _replica("web-2")) == first
    assert b.sign_pod(plugins, _replica("web-3", requests={"cpu": "200m"})) != first
    assert b.sign_pod(plugins, _replica("web-4", tolerations=[{"operator": "Exists"}])) != first
    assert b.sign_pod(plugins, make_pod("db", requests={"cpu": "100m"})) != first


@pytest.mark.parametrize(
    "spec",
    [
        {"spread": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}
                    ]
                }
            }
        },
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
    ],
    ids=["topology spread", "inter-pod affinity", "resource claims"],
)
def test_sign_pod_refuses_pods_a_plugin_cannot_sign(spec: dict[str, Any]) -> None:
    plugins = b.batchable_plugins(_default_plugins({"defaultingType": "List"}))
    assert b.sign_pod(plugins, _replica("web-1", **spec)) is None


def test_system_default_spread_constraints_make_every_pod_unsignable() -> None:
    """Upstream: "pods with default topology constraints are not signable"."""
    plugins = b.batchable_plugins(_default_plugins())
    assert plugins is not None
    assert b.sign_pod(plugins, _replica("web-1")) is None


def test_a_plugin_without_a_signer_disables_signatures() -> None:
    """Upstream computeBatchablePlugins: an out-of-tree PreFilter/Filter/PreScore/Score
    plugin that cannot sign turns signatures off for its profile."""
    cache = Cache()
    fwk = Framework(profile(), Registry(ALL), cache.snapshot)
    unsigned = {k: v for k, v in b.SIGNERS.items() if k != "LabelScore"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(b, "SIGNERS", unsigned)
        assert b.batchable_plugins(fwk) is None
    assert b.batchable_plugins(fwk) is not None


# -- metrics -------------------------------------------------------------------------------


def test_batch_metrics_carry_upstreams_names_and_labels() -> None:
    cache, fwk, algo, _ = _setup(ONE_EACH)
    metrics = Metrics()
    fwk.recorder = metrics.framework_recorder("test")
    for i in range(3):
        _place(cache, fwk, algo, _pod(f"p{i}"))
    _place(cache, fwk, algo, _pod("p3", cpu="0"))  # the batch was used up: a new one
    with pytest.raises(FitError):
        _place(cache, fwk, algo, _pod("p4"))  # another signature
    text = metrics.render().decode()
    assert 'scheduler_batch_attempts_total{profile="test",result="no_hint"} 3.0' in text
    assert 'scheduler_batch_attempts_total{profile="test",result="hint_used"} 2.0' in text
    flushed = 'scheduler_batch_cache_flushed_total{profile="test",reason="pod_incompatible"} 1.0'
    assert flushed in text
