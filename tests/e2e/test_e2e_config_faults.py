"""Hostile configuration on a real API server: what it stores must never stop the operator.

- A SchedulerProfile whose free-form plugin args nest thousands of levels deep (the API
  server stores up to 10,000): the operator stays up, the other profiles schedule, and the
  poison object alone gets Ready=False - also when it exists before the operator starts.
- Fields that pruning would drop silently for non-strict clients are refused by the CRD.
- Leader-election settings that cannot work stop ``multisched run`` at once with one line
  and exit 2; a Lease that cannot be written is reported at ERROR, never silently.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Kube, Operator

_ids = itertools.count()


def _profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": spec,
    }


def _pod(name: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
        },
    }


def _create_poison(kube: Kube, tmp_path: Path, name: str, depth: int) -> None:
    """POST raw JSON (no client-side decoding: kubectl and Python would choke first)."""
    spec = {"profiles": [{"schedulerName": name, "pluginConfig": [{"name": "Custom"}]}]}
    text = json.dumps(_profile(name, spec)).replace(
        '{"name": "Custom"}',
        '{"name": "Custom", "args": ' + '{"a": ' * depth + "1" + "}" * depth + "}",
    )
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    kube.run("create", "--raw", "/apis/multisched.dev/v1alpha1/schedulerprofiles", "-f", str(path))


def _ready(kube: Kube, name: str) -> dict[str, Any]:
    """The Ready condition, read with a jsonpath: the poison object itself is too deep for
    Python's json module, so it is never decoded here."""
    jsonpath = '{.status.conditions[?(@.type=="Ready")]}'
    out = kube.run("get", "schedulerprofile", name, "-o", f"jsonpath={jsonpath}", check=False)
    text = out.stdout.strip()
    return dict(json.loads(text)) if text else {}


def _delete(kube: Kube, *names: str) -> None:
    for name in names:
        kube.run("delete", "schedulerprofile", name, "--ignore-not-found", "--wait=false")


def test_poison_profile_leaves_the_operator_and_the_others_running(
    kube: Kube, start_operator: Any, tmp_path: Path
) -> None:
    n = next(_ids)
    good, poison, late = f"cfg-good-{n}", f"cfg-poison-{n}", f"cfg-poison-late-{n}"
    kube.add_node(f"cfg-node-{n}")
    kube.apply(_profile(good, {"profiles": [{"schedulerName": good}]}))
    # Deeper than Python's recursion limit: this crash-looped the operator at every start.
    _create_poison(kube, tmp_path, poison, 3000)
    try:
        op: Operator = start_operator()
        bad = kube.wait_for("the poison object's Ready=False", lambda: _ready(kube, poison), 45)
        assert (bad["status"], bad["reason"]) == ("False", "InvalidConfiguration")
        assert "pluginConfig[0].args.a.a" in bad["message"]
        assert "nested more than 64 levels deep" in bad["message"]
        kube.apply(_pod(f"{good}-pod", good))
        assert kube.wait_for("the good profile's pod bound", lambda: kube.node_of(f"{good}-pod"))
        assert _ready(kube, good)["status"] == "True"
        # One arriving while the operator runs (the 900 levels) is no different.
        _create_poison(kube, tmp_path, late, 900)
        late_ready = kube.wait_for("the late poison's status", lambda: _ready(kube, late), 30)
        assert late_ready["status"] == "False"
        time.sleep(2)
        assert op.proc.poll() is None, op.output()[-4000:]
        assert "RecursionError" not in op.output()
        assert "Traceback" not in op.output()
    finally:
        _delete(kube, good, poison, late)


REFUSED = {
    "weight on a filter plugin": (
        {"plugins": {"filter": {"enabled": [{"name": "NodeName", "weight": 3}]}}},
        "weight is only allowed on score and multiPoint plugins",
    ),
    "unknown extension point": (
        {"plugins": {"preFilterX": {"enabled": [{"name": "NodeName"}]}}},
        "unknown extension point; expected one of multiPoint, preEnqueue",
    ),
    "weight on a profile": ({"weight": 2}, "weight is not a profile field"),
    "one plugin's args in another's entry": (
        {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"hardPodAffinityWeight": 2}}]},
        "argument(s) of InterPodAffinity only",
    ),
    "a typed arg of the wrong type": (
        {"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": "2"}}]},
        "must be of type integer",
    ),
}


@pytest.mark.parametrize("validate", ["false", "warn"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_fields_pruning_would_drop_are_refused_for_every_client(
    kube: Kube, case: str, validate: str
) -> None:
    """Not only for strict clients: with --validate=false/warn (as the Python client) the
    API server used to prune these and the object went Ready=True without them."""
    fields, expected = REFUSED[case]
    name = f"cfg-refused-{next(_ids)}"
    obj = _profile(name, {"profiles": [{"schedulerName": name, **fields}]})
    out = kube.run(
        "create", f"--validate={validate}", "-f", "-", stdin=json.dumps(obj), check=False
    )
    _delete(kube, name)
    assert out.returncode != 0, f"{case} was accepted"
    assert expected in out.stderr


def test_leader_election_in_a_profile_is_refused_with_a_pointer(kube: Kube) -> None:
    name = f"cfg-le-{next(_ids)}"
    obj = _profile(
        name, {"leaderElection": {"leaderElect": True}, "profiles": [{"schedulerName": name}]}
    )
    out = kube.run("create", "--validate=false", "-f", "-", stdin=json.dumps(obj), check=False)
    _delete(kube, name)
    assert out.returncode != 0
    assert "leader election is a process setting (multisched run --leader-elect flags" in (
        out.stderr
    )


BAD_FLAGS = {
    "lease name": (("--lease-name", "Bad Name!"), "--lease-name: 'Bad Name!' is not a valid"),
    "lease namespace": (("--lease-namespace", "Not_A_Namespace"), "--lease-namespace:"),
    "beyond int32": (("--leader-elect-lease-duration", "99999999999h"), "out of range"),
    "nanoseconds": (
        (
            "--leader-elect-lease-duration=3ns",
            "--leader-elect-renew-deadline=2ns",
            "--leader-elect-retry-period=1ns",
        ),
        "is less than 1s",
    ),
    "renew not below lease": (
        ("--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"),
        "must be less than --leader-elect-lease-duration 10s",
    ),
    "retry too long": (("--leader-elect-retry-period=9s",), "too long for"),
}


@pytest.mark.parametrize("case", list(BAD_FLAGS))
def test_bad_leader_election_values_stop_the_start_with_one_line(kube: Kube, case: str) -> None:
    flags, expected = BAD_FLAGS[case]
    out = subprocess.run(
        [sys.executable, "-m", "multisched", "run", "-A", "--leader-elect", *flags],
        env=kube.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: ") and expected in out.stderr
    assert "Traceback" not in out.stderr


def test_a_lease_that_cannot_be_written_is_loud_and_never_leads(
    kube: Kube, start_operator: Any
) -> None:
    """A valid name in a namespace that does not exist: the Lease cannot be created. Not a
    DEBUG line: an ERROR naming the Lease and the API's answer, and no scheduling."""
    n = next(_ids)
    name = f"cfg-nolease-{n}"
    kube.apply(_profile(name, {"profiles": [{"schedulerName": name}]}))
    try:
        op: Operator = start_operator(
            "--leader-elect", "--lease-namespace", f"missing-{n}", "--lease-name", "lock"
        )
        line = kube.wait_for(
            "an ERROR about the lease",
            lambda: next(
                (
                    ln
                    for ln in op.output().splitlines()
                    if "ERROR" in ln and f"could not create lease missing-{n}/lock" in ln
                ),
                None,
            ),
        )
        assert "not found" in line
        kube.apply(_pod(f"{name}-pod", name))
        time.sleep(3)
        assert kube.node_of(f"{name}-pod") == ""  # no lease, no binding
        assert op.proc.poll() is None
        assert "became leader" not in op.output()
    finally:
        _delete(kube, name)
        kube.run("delete", "pod", f"{name}-pod", "--force", "--grace-period=0", check=False)
