"""Why a pod did not fit, and the FailedScheduling message upstream builds from it."""

from __future__ import annotations

from collections import Counter

from .status import Status

NO_NODE_AVAILABLE = "0/{} nodes are available"


class Diagnosis:
    __slots__ = ("node_to_status", "post_filter_msg", "pre_filter_msg", "unschedulable_plugins")

    def __init__(self) -> None:
        self.node_to_status: dict[str, Status] = {}
        self.unschedulable_plugins: set[str] = set()
        self.pre_filter_msg = ""
        self.post_filter_msg = ""


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
            # Current upstream prints one period even when the PostFilter message has its own.
            msg += f" {d.post_filter_msg.rstrip('.')}."
        return msg
