"""The garbage collector's policy: for a long-running scheduler, and for the one-shot
commands (every ``multisched`` command but ``run``), which keep what they read to the end.

A scheduler keeps one compact object per pod of the cluster, and each scheduling cycle
allocates and drops a few hundred more. With CPython's default thresholds (700, 10, 10) the
collector runs every few cycles and walks every cached pod at each full collection: measured
on a backlog of 2,000 pods, 0.27 s of collections after start-up, 0.1 s with this policy.

So a young generation of 50,000 objects (cycles' temporaries die by reference counting long
before that; what survives is the cache's growth), and:

- while the first listing is digested the collector is off (``pause``): every object the
  listing builds survives, and collecting would walk the growing cache again and again
  (0.8 s of the 3.1 s of CPU that reading 50,000 pods takes, 0.1 s at 10,000);
- once it is in (``listed``), what it built is set aside from collections and the
  collector runs again;
- once the scheduler has been quiet for a second (no pod popped, none in flight, bindings
  included), the start-up heap is collected once and frozen out of every later collection
  (``freeze``).

A one-shot command only takes the young generation, for its duration (``tuned``): a
simulation of 2,000 pods on 1,000 nodes ran 267 young collections, 0.11-0.15 s of its 2.1 s
of CPU, and runs 3. While it reads its input it runs none (``reading``): what it read is
kept to its end, as a listing is.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between two young collections (CPython's default is 700).
YOUNG_THRESHOLD = 50_000


def tune() -> None:
    """Collect young objects rarely; older generations keep CPython's ratios."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


@contextmanager
def tuned() -> Iterator[None]:
    """``tune`` for the block (a command), the caller's thresholds back after it, and what
    the command set aside (``reading``) handed back to the collector: a caller that runs
    commands in-process (a test, a notebook) would otherwise keep each one's garbage."""
    threshold = gc.get_threshold()
    tune()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def pause() -> None:
    """No collection until ``listed``: the first listing is on its way."""
    gc.disable()


def listed() -> None:
    """The first listing is in: its objects leave the collector's generations (a young
    collection would otherwise walk all of them at once), and the collector runs again."""
    gc.freeze()
    gc.enable()


@contextmanager
def reading() -> Iterator[None]:
    """A one-shot command reads its input, which it keeps to its end: no collection while
    it reads (as ``pause``), and what it read is set aside from later ones (as ``listed``)
    until the command ends (``tuned``). Reading simulate's 3,000-object bench file ran young
    collections over it for 0.05 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def freeze() -> None:
    """After the first full listing (once the scheduler is quiet): what start-up built lives
    as long as the process.
    Garbage is collected first, that of the listing included, so that none is kept for good
    (0.6 s at 10,000 running pods, once)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
