"""Cluster state as the scheduler reads it: pods, nodes, assumed pods, snapshots."""

from .cache import Cache, Snapshot
from .dra import (
    DEVICE_CLASS,
    DRA_KINDS,
    NAMESPACED_DRA_KINDS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    DraStore,
)
from .groups import ELASTIC_QUOTA, GROUP_KINDS, POD_GROUP, POD_GROUP_LABEL, GroupStore
from .labels import LabelSelector, NodeSelector, NodeSelectorTerm, Requirement, SelectorError
from .node_info import HostPortInfo, ImageStateSummary, NodeError, NodeInfo
from .pod_info import (
    DEFAULT_SCHEDULER_NAME,
    AffinityTerm,
    PodError,
    PodInfo,
    Taint,
    Toleration,
    WeightedAffinityTerm,
)
from .quantity import QuantityError, parse_quantity, to_int, to_milli
from .resources import Resource
from .volumes import VOLUME_KINDS, AssumeCache, AssumeError, VolumeStore
from .workloads import WORKLOAD_KINDS, WorkloadStore

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "DEVICE_CLASS",
    "DRA_KINDS",
    "ELASTIC_QUOTA",
    "GROUP_KINDS",
    "NAMESPACED_DRA_KINDS",
    "POD_GROUP",
    "POD_GROUP_LABEL",
    "RESOURCE_CLAIM",
    "RESOURCE_CLAIM_TEMPLATE",
    "RESOURCE_SLICE",
    "VOLUME_KINDS",
    "WORKLOAD_KINDS",
    "AffinityTerm",
    "AssumeCache",
    "AssumeError",
    "Cache",
    "DraStore",
    "GroupStore",
    "HostPortInfo",
    "ImageStateSummary",
    "LabelSelector",
    "NodeError",
    "NodeInfo",
    "NodeSelector",
    "NodeSelectorTerm",
    "PodError",
    "PodInfo",
    "QuantityError",
    "Requirement",
    "Resource",
    "SelectorError",
    "Snapshot",
    "Taint",
    "Toleration",
    "VolumeStore",
    "WeightedAffinityTerm",
    "WorkloadStore",
    "parse_quantity",
    "to_int",
    "to_milli",
]
