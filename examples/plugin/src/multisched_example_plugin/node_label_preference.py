"""NodeLabelPreference: filter out nodes marked to avoid, and score nodes with a label higher.

Enable it in a SchedulerProfile::

    plugins:
      multiPoint:
        enabled: [{name: NodeLabelPreference, weight: 5}]
    pluginConfig:
      - name: NodeLabelPreference
        args: {preferLabel: disktype=ssd, avoidLabel: maintenance=true}
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import MAX_NODE_SCORE, CycleState, Handle, Status

REASON_AVOIDED = "node(s) are marked to be avoided"


class NodeLabelPreferenceArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    prefer_label: str = Field("", alias="preferLabel")
    avoid_label: str = Field("", alias="avoidLabel")

    @field_validator("prefer_label", "avoid_label")
    @classmethod
    def _key_value(cls, value: str) -> str:
        if value and "=" not in value:
            raise ValueError("must be key=value")
        return value


def _split(label: str) -> tuple[str, str] | None:
    if not label:
        return None
    key, _, value = label.partition("=")
    return key, value


class NodeLabelPreference:
    name = "NodeLabelPreference"
    args_model: ClassVar[type[BaseModel]] = NodeLabelPreferenceArgs

    def __init__(self, args: NodeLabelPreferenceArgs | None, handle: Handle) -> None:
        args = args or NodeLabelPreferenceArgs()
        self.prefer = _split(args.prefer_label)
        self.avoid = _split(args.avoid_label)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if self.avoid is not None and node.labels.get(self.avoid[0]) == self.avoid[1]:
            return Status.unschedulable(REASON_AVOIDED)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if self.prefer is not None and node.labels.get(self.prefer[0]) == self.prefer[1]:
            return MAX_NODE_SCORE
        return 0
