"""Cache: assume, confirm, forget; images and ports accounting."""

import pytest

from builders import make_pod, node_dict
from multisched.cache import Cache


def test_assume_confirm_forget() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1", cpu="4"))
    pod = make_pod("a", requests={"cpu": "1"})
    cache.assume_pod(pod, "n1")
    node = cache.snapshot.node_info_map["n1"]
    assert node.requested.milli_cpu == 1000
    assert node.requested.allowed_pod_number == 1
    assert cache.is_assumed(pod.uid)
    with pytest.raises(ValueError, match="already in the cache"):
        cache.assume_pod(pod, "n1")
    cache.forget_pod(pod)
    assert node.requested.milli_cpu == 0
    assert node.pods == []
    # Assume again, then the watch shows the bound pod: confirmed, counted once.
    cache.assume_pod(pod, "n1")
    bound = make_pod("a", requests={"cpu": "1"}, node_name="n1")
    bound.uid = pod.uid
    cache.add_pod(bound)
    assert not cache.is_assumed(pod.uid)
    assert node.requested.milli_cpu == 1000
    cache.forget_pod(bound)  # confirmed pods are not forgotten
    assert node.requested.milli_cpu == 1000
    assert cache.remove_pod(pod.uid) is not None
    assert node.requested.milli_cpu == 0


def test_pod_seen_before_its_node() -> None:
    cache = Cache()
    cache.add_pod(make_pod("a", requests={"cpu": "1"}, node_name="late"))
    assert cache.snapshot.node_info_list == []  # no Node object yet: not schedulable
    cache.add_node(node_dict("late"))
    assert cache.snapshot.node_info_map["late"].requested.milli_cpu == 1000


def test_image_states_count_nodes() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1", images=[(["nginx:1"], 100)]))
    cache.add_node(node_dict("n2", images=[(["nginx:1", "nginx:latest"], 100)]))
    n1 = cache.snapshot.node_info_map["n1"]
    assert n1.image_states["nginx:1"].num_nodes == 2
    cache.remove_node("n2")
    assert n1.image_states["nginx:1"].num_nodes == 1
    assert cache.node_count == 1


def test_host_ports_conflict_rules() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1"))
    pod = make_pod("a", host_ports=[8080])
    cache.add_pod(make_pod("a", host_ports=[8080], node_name="n1"))
    ports = cache.snapshot.node_info_map["n1"].used_ports
    assert ports.conflicts("0.0.0.0", "TCP", 8080)
    assert ports.conflicts("10.0.0.1", "TCP", 8080)  # 0.0.0.0 covers every IP
    assert not ports.conflicts("0.0.0.0", "UDP", 8080)
    assert not ports.conflicts("0.0.0.0", "TCP", 0)
    assert pod.host_ports == (("0.0.0.0", "TCP", 8080),)


def test_affinity_lists_follow_pods() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1"))
    cache.add_node(node_dict("n2"))
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"a": "b"}},
                }
            ]
        }
    }
    pod = make_pod("x", node_name="n2", affinity=anti)
    cache.add_pod(pod)
    snap = cache.snapshot
    assert [n.name for n in snap.have_pods_with_affinity_list()] == ["n2"]
    assert [n.name for n in snap.have_pods_with_required_anti_affinity_list()] == ["n2"]
    cache.remove_pod(pod.uid)
    assert snap.have_pods_with_required_anti_affinity_list() == []


def test_assumed_pods_expire_only_after_their_binding_finished_and_the_deadline_passed() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1", cpu="4"))
    pending = cache.assume_pod(make_pod("binding", requests={"cpu": "1"}), "n1")
    sent = cache.assume_pod(make_pod("sent", requests={"cpu": "2"}), "n1")
    cache.finish_binding(sent.uid, deadline=100.0)
    assert cache.cleanup_assumed_pods(now=99.0) == []
    assert [p.uid for p in cache.cleanup_assumed_pods(now=100.0)] == [sent.uid]
    # A binding still under way has no deadline yet.
    assert cache.cleanup_assumed_pods(now=1e12) == []
    assert cache.is_assumed(pending.uid)
    assert cache.snapshot.node_info_map["n1"].requested.milli_cpu == 1000


def test_a_confirmed_pod_never_expires() -> None:
    cache = Cache()
    cache.add_node(node_dict("n1", cpu="4"))
    pod = make_pod("web", requests={"cpu": "1"})
    cache.assume_pod(pod, "n1")
    cache.finish_binding(pod.uid, deadline=10.0)
    bound = make_pod("web", requests={"cpu": "1"}, node_name="n1")
    bound.uid = pod.uid
    cache.add_pod(bound)
    assert cache.cleanup_assumed_pods(now=20.0) == []
    assert cache.snapshot.node_info_map["n1"].requested.milli_cpu == 1000


def test_affinity_node_lists_follow_affinity_pods_only() -> None:
    """The snapshot's lists of nodes holding (anti-)affinity pods stay right through
    assume, bind, forget and removal, whatever kind of pod comes and goes."""
    cache = Cache()
    for name in ("a", "b"):
        cache.add_node(node_dict(name))
    snap = cache.snapshot
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"x": "y"}},
                }
            ]
        }
    }
    assert snap.have_pods_with_affinity_list() == []
    plain = make_pod("plain", node_name="a")
    cache.add_pod(plain)
    assert snap.have_pods_with_affinity_list() == []
    picky = make_pod("picky", affinity=anti)
    assumed = cache.assume_pod(picky, "b")
    assert [n.name for n in snap.have_pods_with_affinity_list()] == ["b"]
    assert [n.name for n in snap.have_pods_with_required_anti_affinity_list()] == ["b"]
    cache.forget_pod(assumed)
    assert snap.have_pods_with_required_anti_affinity_list() == []
    cache.add_pod(make_pod("picky2", node_name="a", affinity=anti))
    cache.add_pod(make_pod("plain2", node_name="b"))
    assert [n.name for n in snap.have_pods_with_affinity_list()] == ["a"]
    cache.remove_pod(plain.uid)
    assert [n.name for n in snap.have_pods_with_affinity_list()] == ["a"]
    (picky2,) = [p for p in cache.pods() if p.name == "picky2"]
    cache.remove_pod(picky2.uid)
    assert snap.have_pods_with_affinity_list() == []
