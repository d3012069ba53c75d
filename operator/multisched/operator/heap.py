"""The garbage collector's policy for a long-running scheduler.

A scheduler keeps one compact object per pod of the cluster, and each scheduling cycle
allocates and drops a few hundred more. With CPython's default thresholds (700, 10, 10) the
collector runs every few cycles and walks every cached pod at each full collection: measured
on a backlog of 2,000 pods, 0.27 s of collections after start-up, 0.1 s with this policy.

So a young generation of 50,000 objects (cycles' temporaries die by reference counting long
before that; what survives is the cache's growth), and, when the queue first runs dry after
the first listing, the heap built at start-up (modules, the listed cluster) is frozen out of
every later collection.
"""

from __future__ import annotations

import gc

#: Allocations between two young collections (CPython's default is 700).
YOUNG_THRESHOLD = 50_000


def tune() -> None:
    """Collect young objects rarely; older generations keep CPython's ratios."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


def freeze() -> None:
    """After the first full listing (once no pod waits): what start-up built lives as long
    as the process.
    Garbage is collected first, so that none is kept for good (73 ms at 50,000 pods, once)."""
    gc.collect()
    gc.freeze()
