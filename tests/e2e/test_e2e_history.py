"""SchedulerProfile history and rollback on a real API server: each spec put in force is a
ControllerRevision, a refused edit is none, and a rollback to a spec the scheduler refuses
is itself refused with the scheduler's message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from test_e2e_operator import condition, profile

from conftest import Kube


def spec(sched: str, disabled: str = "", enabled: str = "") -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": sched}
    if disabled:
        prof["plugins"] = {"score": {"disabled": [{"name": disabled}]}}
    if enabled:
        prof["plugins"] = {"score": {"enabled": [{"name": enabled}]}}
    return {"profiles": [prof]}


def multisched(kube: Kube, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "multisched", *args],
        capture_output=True,
        text=True,
        env={**kube.env, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=90,
        check=False,
    )


def status(kube: Kube, name: str) -> dict[str, Any]:
    return dict(kube.get("schedulerprofile", name).get("status") or {})


def wait_judged(kube: Kube, name: str, ready: str) -> dict[str, Any]:
    generation = kube.get("schedulerprofile", name)["metadata"]["generation"]

    def judged() -> dict[str, Any] | None:
        cond = condition(kube, name)
        if cond.get("observedGeneration") == generation and cond.get("status") == ready:
            return status(kube, name)
        return None

    result: dict[str, Any] = kube.wait_for(f"Ready={ready} of generation {generation}", judged)
    return result


def revisions(kube: Kube, uid: str) -> dict[int, dict[str, Any]]:
    items = kube.get(
        "controllerrevisions", "-A", "-l", f"multisched.dev/schedulerprofile-uid={uid}"
    )
    return {int(r["revision"]): r for r in items["items"]}


def test_history_and_rollback_round_trip(kube: Kube, start_operator: Any) -> None:
    name = sched = "e2e-history"
    start_operator()
    kube.apply(profile(name, spec(sched)))
    first = wait_judged(kube, name, "True")
    assert first["revision"] == 1, first
    uid = kube.get("schedulerprofile", name)["metadata"]["uid"]
    kube.apply(profile(name, spec(sched, "ImageLocality")))
    assert kube.wait_for("revision 2", lambda: status(kube, name).get("revision") == 2)
    # A refused edit is no revision: the last good spec (revision 2) stays in force.
    kube.apply(profile(name, spec(sched, enabled="NoSuchPlugin")))
    refused = wait_judged(kube, name, "False")
    assert refused["revision"] == 2
    assert sorted(revisions(kube, uid)) == [1, 2]

    out = multisched(kube, "history", "sp", name)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["1", "2"]
    assert rows[1].split()[1] == "*"  # revision 2 is in force

    back = multisched(kube, "rollback", "sp", name, "--to-revision", "1")
    assert back.returncode == 0, back.stdout + back.stderr
    assert "rolled back to revision 1" in back.stdout
    # (the API server adds the CRD's defaults to every spec it stores)
    assert kube.get("schedulerprofile", name)["spec"]["profiles"] == spec(sched)["profiles"]
    assert kube.wait_for("revision 3", lambda: status(kube, name).get("revision") == 3)
    # The spec of revision 1 came back: it is renumbered, not copied.
    assert sorted(revisions(kube, uid)) == [2, 3]
    assert revisions(kube, uid)[3]["data"]["spec"]["profiles"] == spec(sched)["profiles"]

    # A revision whose spec the scheduler refuses now (a plugin since uninstalled, say). Owned
    # by the profile: a revision it does not own is not read.
    stale = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": f"{name}-stale",
            "namespace": "default",
            "labels": {"multisched.dev/schedulerprofile-uid": uid},
            "ownerReferences": [
                {
                    "apiVersion": "multisched.dev/v1alpha1",
                    "kind": "SchedulerProfile",
                    "name": name,
                    "uid": uid,
                }
            ],
        },
        "data": {"spec": spec(sched, enabled="UninstalledPlugin")},
        "revision": 10,
    }
    kube.run("create", "-f", "-", stdin=json.dumps(stale))
    refused_back = multisched(kube, "rollback", "sp", name, "--to-revision", "10")
    assert refused_back.returncode == 1, refused_back.stdout + refused_back.stderr
    assert "the scheduler refused revision 10" in refused_back.stderr
    assert "UninstalledPlugin" in refused_back.stderr
    assert condition(kube, name)["status"] == "False"
    assert status(kube, name)["revision"] == 3  # the good spec stays in force

    missing = multisched(kube, "rollback", "sp", name, "--to-revision", "99")
    assert missing.returncode == 2
    assert "revision 99 not found" in missing.stderr
