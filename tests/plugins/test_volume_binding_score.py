"""VolumeBinding's storage capacity scoring (StorageCapacityScoring, on in v1.37): upstream's
scorer_test.go TestScore, the score cases of volume_binding_test.go TestVolumeBinding, and
TestValidateVolumeBindingArgs with the gate on."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod
from multisched.cache import Cache
from multisched.framework import CycleState
from multisched.plugins._function_shape import UtilizationShapePoint, shape_errors
from multisched.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from multisched.plugins.volumebinding.scorer import build_scorer
from volume_support import claim, node, pv, run, storage_class
from volume_support import pod as pod_with_claims

# -- scorer.go -------------------------------------------------------------------------------

DEFAULT_SHAPE = [(0, 100), (100, 0)]  # the default args' shape in node score scale
HDD, SSD = "hdd", "ssd"
GI = 1 << 30


@pytest.mark.parametrize(
    ("shape", "classes", "score"),
    [
        # default shape, single class
        (DEFAULT_SHAPE, {HDD: (0, 100)}, 100),
        (DEFAULT_SHAPE, {HDD: (30, 100)}, 70),
        (DEFAULT_SHAPE, {HDD: (50, 100)}, 50),
        (DEFAULT_SHAPE, {HDD: (100, 100)}, 0),
        # default shape, multiple classes
        (DEFAULT_SHAPE, {HDD: (0, 100), SSD: (0, 100)}, 100),
        (DEFAULT_SHAPE, {HDD: (0, 100), SSD: (30, 100)}, 85),
        (DEFAULT_SHAPE, {HDD: (30, 100), SSD: (30, 100)}, 70),
        (DEFAULT_SHAPE, {HDD: (30, 100), SSD: (60, 100)}, 55),
        (DEFAULT_SHAPE, {HDD: (50, 100), SSD: (50, 100)}, 50),
        (DEFAULT_SHAPE, {HDD: (50, 100), SSD: (100, 100)}, 25),
        (DEFAULT_SHAPE, {HDD: (100, 100), SSD: (100, 100)}, 0),
        # custom shape, multiple classes
        ([(50, 0), (80, 30), (100, 50)], {HDD: (0, 100), SSD: (0, 100)}, 0),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (0, 100), SSD: (30, 100)}, 0),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (30, 100), SSD: (30, 100)}, 0),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (30, 100), SSD: (60, 100)}, 5),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (50, 100), SSD: (100, 100)}, 25),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (90, 100), SSD: (90, 100)}, 40),
        ([(50, 0), (80, 30), (100, 50)], {HDD: (100, 100), SSD: (100, 100)}, 50),
    ],
)
def test_scorer_as_upstream(
    shape: list[tuple[int, int]], classes: dict[str, tuple[int, int]], score: int
) -> None:
    assert build_scorer(shape)(classes) == score


def test_no_classes_no_room_and_more_than_there_is() -> None:
    scorer = build_scorer(DEFAULT_SHAPE)
    assert scorer({}) == 0
    assert scorer({HDD: (1, 0)}) == 0  # no capacity: fully used
    assert scorer({HDD: (200, 100)}) == 0


# -- volume_binding.go Score -------------------------------------------------------------------

WAIT = storage_class("wait-sc")
WAIT_HDD = storage_class("wait-hdd-sc")
WAIT_CAPACITY = storage_class("wait-sc-with-storage-capacity", provisioner="capacity-driver")
DRIVER = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": "capacity-driver"},
    "spec": {"storageCapacity": True},
}
NODE_KEY = "nodeKey"
REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"


def capacity(name: str, klass: str, size: str) -> dict[str, Any]:
    """``makeCapacity``: reachable from the node labelled ``nodeKey: <name>``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "default"},
        "storageClassName": klass,
        "nodeTopology": {"matchLabels": {NODE_KEY: name}},
        "capacity": size,
    }


def local_pv(name: str, klass: str, size: str, host: str) -> dict[str, Any]:
    return pv(name, size=size, klass=klass, host=host)


def zonal_pv(name: str, size: str, zone: str) -> dict[str, Any]:
    region = zone.replace("zone", "region")
    terms = [
        {
            "matchExpressions": [
                {"key": REGION, "operator": "In", "values": [region]},
                {"key": ZONE, "operator": "In", "values": [zone]},
            ]
        }
    ]
    return pv(
        name, size=size, klass="wait-sc", nodeAffinity={"required": {"nodeSelectorTerms": terms}}
    )


def zonal_nodes() -> list[dict[str, Any]]:
    return [
        node(f"{zone}-node-{n}", **{REGION: zone.replace("zone", "region"), ZONE: zone})
        for zone in ("zone-a", "zone-b", "zone-c")
        for n in ("a", "b")
    ]


def keyed_nodes(*names: str) -> list[dict[str, Any]]:
    return [node(n, **{NODE_KEY: n}) for n in names]


def scores(
    nodes: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    shape: list[dict[str, int]] | None = None,
) -> list[int] | None:
    """PreFilter, Filter on every node, PreScore and Score on every node (as upstream's
    test calls Score even on a node Filter refused); None when PreScore skips."""
    cache = Cache()
    for raw in nodes:
        cache.add_node(raw)
    for obj in [WAIT, WAIT_HDD, WAIT_CAPACITY, DRIVER, *claims, *objects]:
        cache.volumes.upsert(obj["kind"], obj)
    args = VolumeBindingArgs.model_validate({"bindTimeoutSeconds": 300, "shape": shape})
    plugin = VolumeBinding(args, _Handle(cache))  # type: ignore[arg-type]
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
        for i, c in enumerate(claims)
    ]
    pod = make_pod("pod-a", volumes=volumes)
    infos = [cache.snapshot.node_info_map[n["metadata"]["name"]] for n in nodes]
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, infos)
    assert status is None
    for info in infos:
        plugin.filter(state, pod, info)
    status = plugin.pre_score(state, pod, infos)
    if status is not None:
        assert status.is_skip()
        return None
    return [plugin.score(state, pod, info) for info in infos]


class _Handle:
    def __init__(self, cache: Cache) -> None:
        self.snapshot = cache.snapshot
        self.client = None


def test_local_volumes_with_close_capacity_are_preferred() -> None:
    pvs = [
        local_pv("pv-a-0", "wait-sc", "200Gi", "node-a"),
        local_pv("pv-a-1", "wait-sc", "200Gi", "node-a"),
        local_pv("pv-b-0", "wait-sc", "100Gi", "node-b"),
        local_pv("pv-b-1", "wait-sc", "100Gi", "node-b"),
    ]
    got = scores(
        [node("node-a"), node("node-b"), node("node-c")],
        [claim("pvc-a", size="50Gi", klass="wait-sc")],
        pvs,
    )
    assert got == [75, 50, 0]


def test_local_volumes_with_close_capacity_are_preferred_multiple_claims() -> None:
    pvs = [
        local_pv(f"pv-{host[-1]}-{i}", klass, size, host)
        for host, size in (("node-a", "200Gi"), ("node-b", "100Gi"))
        for i, klass in enumerate(("wait-sc", "wait-sc", "wait-hdd-sc", "wait-hdd-sc"))
    ]
    got = scores(
        [node("node-a"), node("node-b"), node("node-c")],
        [
            claim("pvc-0", size="50Gi", klass="wait-sc"),
            claim("pvc-1", size="100Gi", klass="wait-hdd-sc"),
        ],
        pvs,
    )
    assert got == [63, 25, 0]


ZONAL_PVS = [
    zonal_pv("pv-a-0", "200Gi", "zone-a"),
    zonal_pv("pv-a-1", "200Gi", "zone-a"),
    zonal_pv("pv-b-0", "100Gi", "zone-b"),
    zonal_pv("pv-b-1", "100Gi", "zone-b"),
]


def test_zonal_volumes_with_close_capacity_are_preferred() -> None:
    got = scores(zonal_nodes(), [claim("pvc-a", size="50Gi", klass="wait-sc")], ZONAL_PVS)
    assert got == [75, 75, 50, 50, 0, 0]


def test_zonal_volumes_with_close_capacity_are_preferred_custom_shape() -> None:
    shape = [
        {"utilization": 0, "score": 0},
        {"utilization": 50, "score": 3},
        {"utilization": 100, "score": 5},
    ]
    got = scores(zonal_nodes(), [claim("pvc-a", size="50Gi", klass="wait-sc")], ZONAL_PVS, shape)
    assert got == [15, 15, 30, 30, 0, 0]


CAPACITIES = [
    capacity("node-a", "wait-sc-with-storage-capacity", "100Gi"),
    capacity("node-b", "wait-sc-with-storage-capacity", "50Gi"),
    capacity("node-c", "wait-sc-with-storage-capacity", "10Gi"),
]
DYNAMIC = claim("pvc-dynamic", size="10Gi", klass="wait-sc-with-storage-capacity")


def test_storage_capacity_score() -> None:
    got = scores(keyed_nodes("node-a", "node-b", "node-c"), [DYNAMIC], CAPACITIES)
    assert got == [90, 80, 0]


def test_storage_capacity_score_with_static_binds() -> None:
    # The PVs chosen for the static claim are scored; the provisioned claim is not.
    pvs = [local_pv(f"pv-static-{n}", "wait-sc", "100Gi", f"node-{n}") for n in "abc"]
    static = claim("pvc-static", size="50Gi", klass="wait-sc")
    got = scores(keyed_nodes("node-a", "node-b", "node-c"), [DYNAMIC, static], [*pvs, *CAPACITIES])
    assert got == [50, 50, 50]


def test_dynamic_provisioning_with_multiple_claims_of_the_same_class() -> None:
    # Two 50Gi claims share the class's 100Gi on the node: counted once, not twice.
    claims = [
        claim(f"pvc-dynamic-{i}", size="50Gi", klass="wait-sc-with-storage-capacity")
        for i in range(2)
    ]
    got = scores(
        keyed_nodes("node-a"),
        claims,
        [capacity("node-a", "wait-sc-with-storage-capacity", "100Gi")],
    )
    assert got == [0]


LEAST_ALLOCATABLE = [
    capacity("node-a", "wait-sc-with-storage-capacity", "100Gi"),
    capacity("node-b", "wait-sc-with-storage-capacity", "20Gi"),
    capacity("node-c", "wait-sc-with-storage-capacity", "10Gi"),
]


def test_prefer_node_with_least_allocatable() -> None:
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    got = scores(keyed_nodes("node-a", "node-b", "node-c"), [DYNAMIC], LEAST_ALLOCATABLE, shape)
    assert got == [10, 50, 100]


def test_prefer_node_with_maximum_allocatable() -> None:
    got = scores(keyed_nodes("node-a", "node-b", "node-c"), [DYNAMIC], LEAST_ALLOCATABLE)
    assert got == [90, 50, 0]


def test_a_driver_without_capacity_tracking_gives_no_score() -> None:
    untracked = storage_class("untracked", provisioner="other-driver")
    got = scores(
        keyed_nodes("node-a", "node-b"),
        [claim("pvc-u", size="10Gi", klass="untracked")],
        [untracked, *CAPACITIES],
    )
    assert got == [0, 0]


def test_bound_claims_only_skip_prescore() -> None:
    # Upstream scores every node 0 then; skipping gives the same ranking at no cost.
    bound = claim("pvc-a", klass="wait-sc", volume="pv-a", bound=True)
    got = scores([node("node-a")], [bound], [pv("pv-a", klass="wait-sc", claim_ref="pvc-a")])
    assert got is None


def test_a_pod_without_claims_skips_prescore() -> None:
    plugin = VolumeBinding(None, _Handle(Cache()))  # type: ignore[arg-type]
    state = CycleState()
    plugin.pre_filter(state, make_pod("p"), [])
    status = plugin.pre_score(state, make_pod("p"), [])
    assert status is not None and status.is_skip()


@pytest.mark.parametrize(("tight", "roomy"), [("n1", "n2"), ("n2", "n1")])
def test_the_default_profile_prefers_the_least_utilized_storage_end_to_end(
    tight: str, roomy: str
) -> None:
    # The default shape scores empty storage 10 and full 0: the 500Gi PV (10% used by the
    # claim) beats the 60Gi one (83%), on otherwise equal nodes.
    placed = run(
        node("n1", cpu="16"),
        node("n2", cpu="16"),
        storage_class("local"),
        claim("data", size="50Gi"),
        pv("tight", size="60Gi", host=tight),
        pv("roomy", size="500Gi", host=roomy),
        pod_with_claims("web", "data"),
    )
    assert placed["web"].node == roomy


# -- VolumeBindingArgs (ValidateVolumeBindingArgs, StorageCapacityScoring on) ----------------


def test_default_args_are_v137s() -> None:
    args = VolumeBindingArgs()
    assert args.bind_timeout_seconds == 600
    assert [(p.utilization, p.score) for p in args.shape] == [(0, 10), (100, 0)]
    for empty in ({"shape": []}, {"shape": None}, {"bindTimeoutSeconds": None}):
        assert VolumeBindingArgs.model_validate(empty).shape == args.shape


@pytest.mark.parametrize(
    "args",
    [
        {
            "bindTimeoutSeconds": 0,
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        },
        {
            "bindTimeoutSeconds": 10,
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        },
        {"shape": [{"utilization": 50}]},  # an absent field is 0, as Go's int32
    ],
)
def test_valid_args(args: dict[str, Any]) -> None:
    VolumeBindingArgs.model_validate(args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {
                "bindTimeoutSeconds": -10,
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
            },
            "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a "
            "negative value",
        ),
        (
            {"shape": [{"utilization": 3, "score": 3}, {"utilization": 1, "score": 1}]},
            "shape[1].utilization: Invalid value: 1: values must be sorted in increasing order",
        ),
        (
            {
                "shape": [
                    {"utilization": -1, "score": 1},
                    {"utilization": 10, "score": -1},
                    {"utilization": 20, "score": 11},
                    {"utilization": 101, "score": 1},
                ]
            },
            "[shape[0].utilization: Invalid value: -1: not in valid range [0, 100], "
            "shape[1].score: Invalid value: -1: not in valid range [0, 10], "
            "shape[2].score: Invalid value: 11: not in valid range [0, 10], "
            "shape[3].utilization: Invalid value: 101: not in valid range [0, 100]]",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        VolumeBindingArgs.model_validate(args)
    assert message in str(info.value)


def test_an_empty_shape_is_required_where_defaulting_does_not_fill_it() -> None:
    assert shape_errors([], "shape") == [
        "shape: Required value: at least one point must be specified"
    ]
    assert shape_errors([UtilizationShapePoint(utilization=0, score=10)], "shape") == []
