"""The scheduling framework: extension-point protocols, Status, CycleState, runtime, registry."""

from .cycle_state import CycleState
from .diagnosis import Diagnosis, FitError
from .events import (
    WILDCARD_EVENT,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from .handle import (
    ApiUnavailable,
    BindingConflict,
    ClusterClient,
    Handle,
    NotLeading,
    PodNominator,
)
from .instrumented import InstrumentedFramework
from .interfaces import (
    EXTENSION_METHODS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    NodeToStatus,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
)
from .queued_pod import QueuedPodInfo
from .recorder import FrameworkRecorder
from .registry import ENTRY_POINT_GROUP, PluginEntry, Registry, RegistryError
from .runtime import Framework, FrameworkError, PluginScores
from .status import Code, PluginError, Status
from .waiting import WaitingPod

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTENSION_METHODS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "WILDCARD_EVENT",
    "ApiUnavailable",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "BindingConflict",
    "ClusterClient",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Diagnosis",
    "EnqueueExtensions",
    "FitError",
    "Framework",
    "FrameworkError",
    "FrameworkRecorder",
    "Handle",
    "InstrumentedFramework",
    "NodeToStatus",
    "NotLeading",
    "PluginEntry",
    "PluginError",
    "PluginScores",
    "PodNominator",
    "PostFilterResult",
    "PreFilterExtensions",
    "PreFilterResult",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "Registry",
    "RegistryError",
    "Status",
    "WaitingPod",
]
