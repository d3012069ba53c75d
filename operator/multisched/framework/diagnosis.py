"""Why a pod did not fit, and the FailedScheduling message upstream builds from it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from operator import attrgetter

from multisched.cache import NodeInfo

from .status import Status

NO_NODE_AVAILABLE = "0/{} nodes are available"

_NAME = attrgetter("name")


class Diagnosis:
    __slots__ = (
        "_node_to_status",
        "_rejected",
        "post_filter_msg",
        "pre_filter_msg",
        "unschedulable_plugins",
    )

    def __init__(self) -> None:
        self._node_to_status: dict[str, Status] = {}
        #: Batches of rejected nodes not yet in ``node_to_status``: a pod that gets a node
        #: never reads its diagnosis, and a spread constraint can reject most of a cluster
        #: in every cycle, so the map by name is built only when read.
        self._rejected: list[tuple[Sequence[NodeInfo], Sequence[Status]]] = []
        self.unschedulable_plugins: set[str] = set()
        self.pre_filter_msg = ""
        self.post_filter_msg = ""

    @property
    def node_to_status(self) -> dict[str, Status]:
        """Each rejected node's status, by node name (upstream's NodeToStatusMap)."""
        for nodes, statuses in self._rejected:
            self._node_to_status.update(zip(map(_NAME, nodes), statuses, strict=True))
        self._rejected.clear()
        return self._node_to_status

    @node_to_status.setter
    def node_to_status(self, value: dict[str, Status]) -> None:
        self._node_to_status = value
        self._rejected.clear()

    def add_rejected(self, nodes: Sequence[NodeInfo], statuses: Sequence[Status]) -> None:
        """``nodes[i]`` rejected with ``statuses[i]``; none of them recorded before."""
        self._rejected.append((nodes, statuses))

    def rejected_count(self) -> int:
        """How many nodes ``node_to_status`` holds, without building it."""
        return len(self._node_to_status) + sum(len(nodes) for nodes, _ in self._rejected)


class FitError(Exception):
    """No node fits; ``str()`` is upstream ``FitError.Error()`` word for word."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        # The text is built when asked for: PostFilter adds to the diagnosis first.
        super().__init__(pod_key)
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return self.message()

    def message(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            # Nodes share status objects (a batch filter gives one per distinct verdict):
            # each object's reasons are counted once, times the nodes that hold it.
            reasons: Counter[str] = Counter()
            for status, nodes in Counter(d.node_to_status.values()).items():
                for reason in status.reasons:
                    reasons[reason] += nodes
            histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
            if histogram:
                msg += f" {', '.join(histogram)}."
        if d.post_filter_msg:
            # As it stands: since v1.29 no period is added after the PostFilter message's own
            # (v1.28's preemption messages ended "..").
            msg += f" {d.post_filter_msg}"
        return msg
