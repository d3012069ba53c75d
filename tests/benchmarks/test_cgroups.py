"""``--pod-cgroups``: the weights the kubelet would give each process, on cgroup v1 and v2
trees, and a real group where this machine lets the test make one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.e2e.__main__ import build_parser
from bench.e2e.cgroups import (
    CGROUP_ROOT,
    CgroupsUnavailable,
    PodCgroups,
    cpu_shares,
    cpu_weight,
    group_path,
)
from bench.e2e.procs import chart_millicpu


def test_shares_are_the_kubelets_for_a_cpu_request() -> None:
    # MilliCPUToShares: millicores * 1024 / 1000, at least 2, at most 262144.
    assert [cpu_shares(m) for m in (0, 1, 100, 250, 1000, 2500)] == [2, 2, 102, 256, 1024, 2560]
    assert cpu_shares(10_000_000) == 262144


def test_v2_weights_are_the_shares_converted_as_runc_does() -> None:
    # 1 + (shares - 2) * 9999 / 262142: one CPU (1024 shares) is weight 39; the least is 1.
    assert [cpu_weight(m) for m in (0, 100, 250, 1000)] == [1, 4, 10, 39]
    assert cpu_weight(10_000_000) == 10000


def _v1_tree(root: Path) -> None:
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cpu.shares").write_text("1024\n")


def test_a_v1_tree_gets_shares_per_process(tmp_path: Path) -> None:
    _v1_tree(tmp_path)
    groups = PodCgroups.create(tmp_path, "run")
    assert not groups.v2 and groups.parent == tmp_path / "cpu" / "run"
    groups.place("kube-apiserver", 250, 4242)
    groups.place("multisched", 100, 4343)
    assert (groups.parent / "kube-apiserver" / "cpu.shares").read_text() == "256"
    assert (groups.parent / "kube-apiserver" / "cgroup.procs").read_text() == "4242"
    assert (groups.parent / "multisched" / "cpu.shares").read_text() == "102"
    assert not (groups.parent / "multisched" / "cpu.weight").exists()


def test_a_v2_tree_delegates_cpu_and_gets_weights(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    groups = PodCgroups.create(tmp_path, "run")
    assert groups.v2 and groups.parent == tmp_path / "run"
    # Both levels must hand the cpu controller down for a child's cpu.weight to exist.
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    assert (groups.parent / "cgroup.subtree_control").read_text() == "+cpu"
    groups.place("etcd", 100, 4242)
    assert (groups.parent / "etcd" / "cpu.weight").read_text() == "4"
    assert (groups.parent / "etcd" / "cgroup.procs").read_text() == "4242"


def test_no_cpu_controller_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    with pytest.raises(CgroupsUnavailable, match=re.escape(f"no CPU controller under {tmp_path}")):
        PodCgroups.create(tmp_path, "run")


def test_a_group_that_cannot_be_made_is_refused_with_the_reason(tmp_path: Path) -> None:
    _v1_tree(tmp_path)
    (tmp_path / "cpu" / "run").write_text("a file where the group would go")
    with pytest.raises(CgroupsUnavailable, match=r"cannot create a group under .*cpu"):
        PodCgroups.create(tmp_path, "run")


def test_the_chart_request_is_read_as_a_quantity(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    for cpu, millicpu in (("100m", 100), ("'1'", 1000), ("0.25", 250), ("2", 2000)):
        values.write_text(f"resources:\n  requests:\n    cpu: {cpu}\n    memory: 1Gi\n")
        assert chart_millicpu(values) == millicpu


def test_the_flag_comes_from_the_command_line_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BENCH_E2E_POD_CGROUPS", raising=False)
    assert build_parser().parse_args([]).pod_cgroups is False
    assert build_parser().parse_args(["--pod-cgroups"]).pod_cgroups is True
    monkeypatch.setenv("BENCH_E2E_POD_CGROUPS", "1")
    assert build_parser().parse_args([]).pod_cgroups is True
    monkeypatch.setenv("BENCH_E2E_POD_CGROUPS", "0")
    assert build_parser().parse_args([]).pod_cgroups is False


def test_real_processes_are_placed_and_all_is_put_back_after() -> None:
    try:
        groups = PodCgroups.create(CGROUP_ROOT, f"multisched-test-{os.getpid()}")
    except CgroupsUnavailable as exc:
        pytest.skip(f"this machine lets no test make a CPU cgroup: {exc}")
    home = group_path(os.getpid(), v2=groups.v2)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        groups.place("harness", 100, os.getpid())  # as the bench places itself
        assert group_path(os.getpid(), v2=groups.v2).endswith("/harness")
        groups.place("sleeper", 250, child.pid)
        relative = groups.parent.relative_to(groups.parent.parent)
        assert group_path(child.pid, v2=groups.v2).endswith(f"{relative}/sleeper")
        weight = "cpu.weight" if groups.v2 else "cpu.shares"
        assert (groups.parent / "sleeper" / weight).read_text().strip() == (
            str(cpu_weight(250)) if groups.v2 else "256"
        )
    finally:
        child.kill()
        child.wait()
        groups.close()
    assert group_path(os.getpid(), v2=groups.v2) == home
    assert not groups.parent.exists()
