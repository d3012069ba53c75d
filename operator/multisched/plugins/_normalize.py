"""Upstream ``helper.DefaultNormalizeScore``: scale to 0..max, optionally reversed."""

from __future__ import annotations


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> None:
    """Rescale ``scores`` in place so the highest becomes ``max_priority``.

    Integer math as Go's: the division truncates toward zero, also for negative scores.
    """
    highest = max(scores, default=0)
    if highest <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    if min(scores) >= 0:  # the usual case: floor division is Go's truncation here
        if reverse:
            scores[:] = [max_priority - max_priority * s // highest for s in scores]
        else:
            scores[:] = [max_priority * s // highest for s in scores]
        return
    for i, score in enumerate(scores):
        scaled = max_priority * score
        scaled = scaled // highest if scaled >= 0 else -(-scaled // highest)
        scores[i] = max_priority - scaled if reverse else scaled
