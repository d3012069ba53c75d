"""ImageLocality: prefer nodes that already hold the pod's images.

Upstream ``imagelocality/image_locality.go``: each present image scores its size scaled
by the share of nodes holding it (so one popular node does not attract every pod), and
the sum is mapped onto 0..100 between 23MB and 1000MB per image. Init containers count, as
upstream does, and so do image volumes (``volumes[].image.reference``; ImageVolume is GA
in v1.36): each is one more image, scored as a container's. The share counts the nodes
holding the image when the pod is scored; v1.28's cache keeps, per node, the count from
when that node was last added or updated, which upstream fixed as a bug
(kubernetes#116938).
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import ImageStateSummary, NodeInfo, PodInfo
from multisched.framework import MAX_NODE_SCORE, CycleState, Handle

NAME = "ImageLocality"

_MB = 1024 * 1024
#: Bounds of the score range: the size range of 90% of images on Docker Hub (upstream).
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB

_DEFAULT_IMAGE_TAG = "latest"


def normalized_image_name(name: str) -> str:
    """The CRI name the kubelet reports: an untagged image gets ``:latest``."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{_DEFAULT_IMAGE_TAG}"
    return name


def pod_images(pod: PodInfo) -> tuple[str, ...]:
    """Upstream ``sumImageScores``' images: init containers', containers', then each image
    volume's reference (a volume without one still counts towards the image count)."""
    if not pod.volumes:
        return pod.containers_images
    references = tuple(
        str(source.get("reference") or "")
        for v in pod.volumes
        if (source := v.get("image")) is not None
    )
    return pod.containers_images + references


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    spread = state.num_nodes / total_num_nodes
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle
        # Normalized image names of the pod scored last: Score runs once per node for
        # the same pod, so this avoids re-normalizing for every node.
        self._last_pod: PodInfo | None = None
        self._images: tuple[str, ...] = ()

    def _pod_images(self, pod: PodInfo) -> tuple[str, ...]:
        if pod is not self._last_pod:
            self._images = tuple(normalized_image_name(i) for i in pod_images(pod))
            self._last_pod = pod
        return self._images

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        image_states = node.image_states
        if not image_states:
            return 0
        images = self._pod_images(pod)
        total_num_nodes = len(self._handle.snapshot.node_info_list)
        if not images or total_num_nodes <= 0:
            return 0
        total = 0
        for image in images:
            summary = image_states.get(image)
            if summary is not None:
                total += scaled_image_score(summary, total_num_nodes)
        # Every container (init ones included) has an image: the API requires it.
        return calculate_priority(total, len(images))

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` for every node at once. An image's spread-scaled size depends only on
        its summary (one per image in the cache), so it is computed once per summary; a
        node's score only on the sum, so once per distinct sum."""
        images = self._pod_images(pod)
        snapshot = self._handle.snapshot
        total_num_nodes = len(snapshot.node_info_list)
        if not images or total_num_nodes <= 0:
            return [0] * len(nodes)
        if not any(snapshot.has_image(image) for image in images):
            return [0] * len(nodes)  # on no node: every sum is 0, and so is its score
        count = len(images)
        scaled: dict[int, int] = {}  # id(summary) -> its scaled score
        priority: dict[int, int] = {0: calculate_priority(0, count)}  # sum -> node score
        if count == 1:
            # Most pods: one image, so a node's score is a lookup of its one summary.
            image = images[0]
            by_summary: dict[int, int] = {}
            out = []
            for node in nodes:
                summary = node.image_states.get(image)
                if summary is None:
                    out.append(0)
                    continue
                score = by_summary.get(id(summary))
                if score is None:
                    total = scaled_image_score(summary, total_num_nodes)
                    score = by_summary[id(summary)] = calculate_priority(total, 1)
                out.append(score)
            return out
        out = []
        for node in nodes:
            image_states = node.image_states
            if not image_states:
                out.append(0)
                continue
            total = 0
            for image in images:
                summary = image_states.get(image)
                if summary is not None:
                    value = scaled.get(id(summary))
                    if value is None:
                        value = scaled[id(summary)] = scaled_image_score(summary, total_num_nodes)
                    total += value
            score = priority.get(total)
            if score is None:
                score = priority[total] = calculate_priority(total, count)
            out.append(score)
        return out


PLUGIN = ImageLocality
