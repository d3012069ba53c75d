"""Carrying out a preemption: upstream ``framework/preemption/executor.go``.

Since v1.33 (SchedulerAsyncPreemption) the victims are deleted off the scheduling cycle:
the preemptor is nominated at once, and held back from the next cycle (DefaultPreemption's
PreEnqueue asks ``is_pod_running_preemption``) until its last victim's deletion has been
sent. A victim waiting at Permit is preempted in memory, without a delete (v1.36).
"""

from __future__ import annotations

import asyncio
import logging
import time

from multisched.cache import PodInfo
from multisched.framework import Handle, NotLeading, Status

from ._preemption_victims import Candidate

logger = logging.getLogger(__name__)

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"


class Executor:
    __slots__ = ("_handle", "_last_victims", "_plugin", "_preempt_waiting", "_preempting")

    def __init__(self, handle: Handle, plugin: str, preempt_waiting: bool = True) -> None:
        self._handle = handle
        self._plugin = plugin
        #: v1.36+: a victim waiting at Permit is preempted (retried after its backoff); before,
        #: it was rejected (parked as unschedulable). Either way no delete is sent for it.
        self._preempt_waiting = preempt_waiting
        #: Preemptors whose victims are being deleted now, by uid.
        self._preempting: set[str] = set()
        #: Preemptor uid -> the victim whose deletion it waits for last. Once the cluster
        #: shows that victim gone or terminating, the preemption counts as done even before
        #: the delete call returns: its watch event may be handled first, and the preemptor
        #: must not be gated then, or no later event would wake it.
        self._last_victims: dict[str, PodInfo] = {}

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption``."""
        if uid not in self._preempting:
            return False
        victim = self._last_victims.get(uid)
        if victim is None:
            return True  # the deletes before the last one are still going
        current = self._in_cluster(victim)
        return current is not None and not current.terminating

    def _in_cluster(self, victim: PodInfo) -> PodInfo | None:
        """The victim as the cache has it now (the snapshot's nodes are the cache's)."""
        node = self._handle.snapshot.get(victim.node_name)
        if node is None:
            return None
        for p in node.pods:
            if p.uid == victim.uid:
                return p
        return None

    async def prepare_candidate(self, c: Candidate, preemptor: PodInfo) -> Status | None:
        """Upstream ``prepareCandidate`` (the synchronous path, CapacityScheduling's): every
        victim preempted inside the cycle, then lower nominations on the node dropped."""
        self._handle.recorder.preemption_victims(len(c.victims))
        for victim in c.victims:
            if victim.terminating:
                continue  # its graceful deletion has begun: another call adds nothing
            try:
                await self.preempt_pod(c, preemptor, victim)
            except NotLeading as exc:
                return Status.error(str(exc))  # said once by whoever stopped the writes
            except Exception as exc:
                logger.warning("preempting %s for %s failed: %s", victim.key, preemptor.key, exc)
                return Status.error(str(exc))
        await self._clear_lower_nominations(c.name, preemptor)
        return None

    def prepare_candidate_async(self, c: Candidate, preemptor: PodInfo) -> None:
        """Upstream ``prepareCandidateAsync``: the deletes go on after this cycle ends."""
        self._handle.recorder.preemption_victims(len(c.victims))
        victims = [v for v in c.victims if not v.terminating]
        if not victims:
            return
        self._preempting.add(preemptor.uid)
        self._handle.run_in_background(self._preempt_async(c, preemptor, victims))

    async def _preempt_async(
        self, c: Candidate, preemptor: PodInfo, victims: list[PodInfo]
    ) -> None:
        start = time.perf_counter()
        failed = in_memory = already_gone = False
        uid = preemptor.uid
        try:
            # Lower-priority pods nominated here may no longer fit: let them look elsewhere
            # now rather than after the victims are gone.
            await self._clear_lower_nominations(c.name, preemptor)
            # All victims but the last at once, then the last; a failure skips the last, so
            # the preemptor is back sooner.
            if len(victims) > 1:
                done = await asyncio.gather(
                    *(self._preempt_logged(c, preemptor, v) for v in victims[:-1])
                )
                failed = not all(done)
            if not failed:
                last = victims[-1]
                # Gone already (another preemptor's victim too): its deletion event came
                # while this preemptor was gated, as the others' may have, and none is left
                # to wake it. (Upstream races the same way; asyncio handles a watch event
                # before the delete's response often enough to strand the preemptor.)
                already_gone = self._in_cluster(last) is None
                self._last_victims[uid] = last
                outcome = await self._preempt_logged(c, preemptor, last, in_memory=True)
                failed = outcome is False
                in_memory = outcome is None
        finally:
            self._preempting.discard(uid)
            self._last_victims.pop(uid, None)
        if failed or in_memory or already_gone:
            # No deletion event will wake the preemptor (none was sent, the last victim
            # left only the scheduler's memory, or it had left the cluster before): it must
            # not wait in the pool for one.
            self._handle.activate([preemptor])
        result = RESULT_ERROR if failed else RESULT_SUCCESS
        self._handle.recorder.preemption_goroutine(result, time.perf_counter() - start)

    async def _preempt_logged(
        self, c: Candidate, preemptor: PodInfo, victim: PodInfo, in_memory: bool = False
    ) -> bool | None:
        """True: deleted; None (when ``in_memory`` is asked for): preempted in memory;
        False: the delete failed (logged here, unless this replica stopped leading)."""
        try:
            preempted_in_memory = await self.preempt_pod(c, preemptor, victim)
        except NotLeading:
            return False  # said once by whoever stopped the writes
        except Exception as exc:
            logger.warning("preempting %s for %s failed: %s", victim.key, preemptor.key, exc)
            return False
        return None if in_memory and preempted_in_memory else True

    async def preempt_pod(self, c: Candidate, preemptor: PodInfo, victim: PodInfo) -> bool:
        """Upstream ``PreemptPod``: whether the victim was preempted in memory only (its
        Preempted event recorded here); otherwise it is deleted (the client marks it
        DisruptionTarget, as the preemptor's scheduler, and records Preempted)."""
        client = self._handle.client
        message = f"Preempted by pod {preemptor.uid} on node {c.name}"
        if self._preempt_in_memory(victim):
            if client is not None:
                client.record_preempted(victim, f"{message} (in kube-scheduler memory).")
            return True
        if client is not None:
            await client.delete_pod(victim, message, preemptor.scheduler_name)
        return False

    def _preempt_in_memory(self, victim: PodInfo) -> bool:
        """A victim held at Permit is rejected, one in PreBind cancelled: its binding cycle
        ends with an error and it goes back to the queue, no delete sent. False when it is
        past both (allowed, or binding now): it is deleted."""
        waiting = self._handle.get_waiting_pod(victim.uid)
        if waiting is not None:
            if not self._preempt_waiting:
                waiting.reject(self._plugin, "preempted")
                return True
            return waiting.preempt(self._plugin, "preempted")
        in_pre_bind = self._handle.get_pod_in_pre_bind(victim.uid)
        return in_pre_bind is not None and in_pre_bind.cancel_pod(f"preempted by {self._plugin}")

    async def _clear_lower_nominations(self, node: str, preemptor: PodInfo) -> None:
        """Upstream ``clearNominatedNodeName`` of the lower-priority pods nominated here: a
        patch for each whose status names the node (none for a nomination the API does not
        show yet); the nominator follows when the API echoes it, as upstream's does."""
        for p in list(self._handle.nominator.nominated_pods_for_node(node)):
            if p.priority < preemptor.priority and p.nominated_node_name:
                await set_nominated_node(self._handle, p, "")


async def set_nominated_node(handle: Handle, pod: PodInfo, node_name: str) -> None:
    """Patch the nomination; a failure is not critical (upstream logs it and goes on)."""
    client = handle.client
    if client is None:
        return
    try:
        await client.set_nominated_node(pod, node_name)
    except NotLeading:
        pass  # said once by whoever stopped the writes
    except Exception as exc:
        logger.warning("could not clear nominatedNodeName of %s: %s", pod.key, exc)
