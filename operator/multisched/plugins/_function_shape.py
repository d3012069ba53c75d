"""Scoring function shapes in plugin args (upstream ``UtilizationShapePoint`` and
``validateFunctionShape`` in apis/config/validation/validation_pluginargs.go), for
VolumeBinding's ``shape`` and NodeResourcesFit's RequestedToCapacityRatio. The function
itself is ``_resource_allocation.broken_linear``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ._label_validation import invalid, required

#: Upper bound of a shape point's score in the config (upstream ``MaxCustomPriorityScore``).
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


class UtilizationShapePoint(BaseModel):
    """One point; both fields are plain int32 upstream, so an absent one is 0."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    utilization: int = 0
    score: int = 0


class ShapePoint(Protocol):
    """What validation reads of a point (NodeResourcesFit's args have a model of their own)."""

    @property
    def utilization(self) -> int: ...

    @property
    def score(self) -> int: ...


def shape_errors(shape: Sequence[ShapePoint], path: str) -> list[str]:
    """``validateFunctionShape``: at least one point, utilization increasing, utilization
    in [0, 100] and score in [0, 10]."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errs.append(
                invalid(
                    f"{path}[{i}].utilization",
                    point.utilization,
                    f"not in valid range [0, {MAX_UTILIZATION}]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                invalid(
                    f"{path}[{i}].score",
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errs
