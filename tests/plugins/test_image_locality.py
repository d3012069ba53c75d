"""Cases from upstream v1.37 imagelocality/image_locality_test.go (same sizes, same scores;
SignPod left out: multisched has no pod signatures)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod, node_dict
from multisched.cache import Cache, PodInfo, Snapshot
from multisched.framework import CycleState
from multisched.plugins.image_locality import ImageLocality, normalized_image_name, pod_images

MB = 1024 * 1024
Images = list[tuple[list[str], int]]


class _Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def pod(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]
    }
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]
    if volumes:
        spec["volumes"] = [
            {"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)
        ]
    return make_pod(**spec)


NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []

CASES: list[tuple[str, PodInfo, list[Images], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        pod("gcr.io/40", "gcr.io/250"),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        pod("gcr.io/40", "gcr.io/300"),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        pod("gcr.io/10", "gcr.io/4000"),
        [NODE_4000_30, NODE_250_10],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        pod("gcr.io/10", "gcr.io/4000"),
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        pod("gcr.io/30", "gcr.io/40"),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    (
        "images on no node: every node scores 0",
        pod("gcr.io/none", "gcr.io/neither"),
        [NODE_40_300_2000, NODE_20_30_40],
        [0, 0],
    ),
    (
        # node1: 100 * (300M * 1/2 - 23M) / (1000M * 2 - 23M) = 6; node2: 30M * 1/2 < 23M.
        "pod with ImageVolume",
        pod("gcr.io/30", volumes=("gcr.io/300",)),
        [NODE_300_600_900, NODE_4000_30],
        [6, 0],
    ),
    (
        "same images as ImageVolume pod but as regular container images",
        pod("gcr.io/30", "gcr.io/300"),
        [NODE_300_600_900, NODE_4000_30],
        [6, 0],
    ),
    (
        # Two image volumes and a container: three images, 1000M each at most;
        # node1: 100 * ((300M + 600M) * 1/2 - 23M) / (1000M * 3 - 23M) = 14.
        "image volumes count towards the pod's image count",
        pod("gcr.io/30", volumes=("gcr.io/300", "gcr.io/600")),
        [NODE_300_600_900, NODE_4000_30],
        [14, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        pod("gcr.io/30", init=("gcr.io/300",)),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod_info", "node_images", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_score(pod_info: PodInfo, node_images: list[Images], expected: list[int]) -> None:
    cache = Cache()
    for i, images in enumerate(node_images, 1):
        cache.add_node(node_dict(f"node{i}", images=images or None))
    plugin = ImageLocality(None, _Handle(cache.snapshot))  # type: ignore[arg-type]
    state = CycleState()
    nodes = cache.snapshot.node_info_list
    got = [plugin.score(state, pod_info, n) for n in nodes]
    assert got == expected
    assert plugin.score_nodes(state, pod_info, nodes) == expected  # the batch path agrees


def test_score_follows_the_pod() -> None:
    """The per-pod name cache must not leak one pod's images into another's score."""
    cache = Cache()
    cache.add_node(node_dict("node1", images=NODE_40_300_2000))
    cache.add_node(node_dict("node2", images=NODE_250_10))
    plugin = ImageLocality(None, _Handle(cache.snapshot))  # type: ignore[arg-type]
    node2 = cache.snapshot.node_info_map["node2"]
    assert plugin.score(CycleState(), pod("gcr.io/40", "gcr.io/300"), node2) == 0
    assert plugin.score(CycleState(), pod("gcr.io/40", "gcr.io/250"), node2) == 5


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@sha256:" + "ab" * 32, "root@sha256:" + "ab" * 32),
    ],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


def test_volumes_without_an_image_source_are_not_images() -> None:
    with_volumes = make_pod(
        containers=[{"name": "c", "image": "gcr.io/300"}],
        volumes=[{"name": "e", "emptyDir": {}}, {"name": "i", "image": {"reference": "x"}}],
    )
    assert pod_images(with_volumes) == ("gcr.io/300", "x")
    assert pod_images(pod("gcr.io/300")) == ("gcr.io/300",)
