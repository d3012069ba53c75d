"""``--pod-cgroups``: each process of the run in a CPU cgroup of its own, weighted by its CPU
request, as the kubelet runs a control plane's static pods and the chart's pod.

Without it, every process shares one group, and Linux divides busy cores per thread: a Go
process with many runnable threads takes a larger part of two busy cores than a
single-threaded one does. On a node, the kubelet puts each pod in a cgroup whose weight comes
from its CPU request (``MilliCPUToShares``), however many threads it runs. The weights only
matter while the cores are contended; no group is capped.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

#: CPU requests in millicores: kubeadm's static pods, and the harness (this process, the
#: cluster's clients: it creates the pods and watches them bound).
KUBEADM_MILLICPU = {"etcd": 100, "kube-apiserver": 250, "kube-scheduler": 100}
HARNESS_MILLICPU = 100
#: The kubelet's bounds (pkg/kubelet/cm/helpers_linux.go).
MIN_SHARES, MAX_SHARES = 2, 262144
CGROUP_ROOT = Path("/sys/fs/cgroup")


class CgroupsUnavailable(RuntimeError):
    """No CPU controller this process may write to."""


def cpu_shares(millicpu: int) -> int:
    """cgroup v1 ``cpu.shares`` for a CPU request, as the kubelet's MilliCPUToShares."""
    return min(MAX_SHARES, max(MIN_SHARES, millicpu * 1024 // 1000))


def cpu_weight(millicpu: int) -> int:
    """cgroup v2 ``cpu.weight`` for a CPU request: its shares, converted as runc does."""
    return 1 + (cpu_shares(millicpu) - 2) * 9999 // 262142


class PodCgroups:
    """A parent group for the run, and one child per process placed in it."""

    def __init__(self, parent: Path, *, v2: bool) -> None:
        self.parent = parent
        self.v2 = v2
        self._home: Path | None = None  # the harness's own group before it moved

    @classmethod
    def create(cls, root: Path = CGROUP_ROOT, name: str = "") -> PodCgroups:
        """The run's parent group under the CPU controller's hierarchy (v1 ``cpu``, else
        v2's unified one), or ``CgroupsUnavailable`` saying why not."""
        name = name or f"multisched-bench-{os.getpid()}"
        v1 = root / "cpu"
        v2 = not (v1 / "cpu.shares").exists()
        if v2 and "cpu" not in _read(root / "cgroup.controllers").split():
            raise CgroupsUnavailable(f"no CPU controller under {root}")
        base = root if v2 else v1
        try:
            if v2:  # the children's cpu.weight exists only once both levels delegate cpu
                _enable_cpu(root)
            parent = base / name
            parent.mkdir(exist_ok=True)
            if v2:
                _enable_cpu(parent)
        except OSError as exc:
            raise CgroupsUnavailable(f"cannot create a group under {base}: {exc}") from None
        return cls(parent, v2=v2)

    def place(self, name: str, millicpu: int, pid: int) -> None:
        """Move ``pid`` (all its threads) into the child ``name``, weighted for ``millicpu``."""
        group = self.parent / name
        group.mkdir(exist_ok=True)
        if self.v2:
            (group / "cpu.weight").write_text(str(cpu_weight(millicpu)))
        else:
            (group / "cpu.shares").write_text(str(cpu_shares(millicpu)))
        if pid == os.getpid() and self._home is None:
            self._home = _own_group(self.parent.parent, v2=self.v2)
        (group / "cgroup.procs").write_text(str(pid))

    def close(self) -> None:
        """Move the harness back where it was, and remove the groups (their processes are
        gone by now; a group still in use is left and stays harmless)."""
        if self._home is not None:
            with contextlib.suppress(OSError):
                (self._home / "cgroup.procs").write_text(str(os.getpid()))
        if not self.parent.is_dir():
            return
        for child in self.parent.iterdir():
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        with contextlib.suppress(OSError):
            self.parent.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _enable_cpu(group: Path) -> None:
    control = group / "cgroup.subtree_control"
    if "cpu" not in _read(control).split():
        control.write_text("+cpu")


def group_path(pid: int | str, *, v2: bool) -> str:
    """A process's CPU group as /proc/<pid>/cgroup names it (v1: on the line of the cpu
    controller; v2: on the line of hierarchy 0); "" if none is named."""
    for line in _read(Path(f"/proc/{pid}/cgroup")).splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if (hierarchy == "0") if v2 else ("cpu" in controllers.split(",")):
            return path
    return ""


def _own_group(base: Path, *, v2: bool) -> Path:
    """The group this process is in now, in ``base``'s hierarchy."""
    return base / group_path("self", v2=v2).lstrip("/")


@contextlib.contextmanager
def pod_cgroups(enabled: bool) -> Iterator[PodCgroups | None]:
    """The run's groups with the harness already placed in its own, or None when not asked."""
    if not enabled:
        yield None
        return
    groups = PodCgroups.create()
    try:
        try:
            groups.place("harness", HARNESS_MILLICPU, os.getpid())
        except OSError as exc:
            raise CgroupsUnavailable(f"cannot move this process into a group: {exc}") from None
        yield groups
    finally:
        groups.close()
