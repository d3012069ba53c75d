"""``history``/``rollback`` argument handling and revision choice (the round trip against a
real API server is tests/e2e/test_e2e_history.py)."""

from __future__ import annotations

from typing import Any

import pytest

from live_support import LiveCluster
from multisched.cli import main
from multisched.live.history import history_table, pick, profile_name
from multisched.live.reading import LiveError


def rev(name: str, number: int, **notes: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": notes}, "revision": number}


@pytest.mark.parametrize(
    ("kind", "name"), [("sp", "a"), ("schedulerprofile", "a"), ("sp/a", None), ("SP", "a")]
)
def test_the_profile_is_named_as_kubectl_names_it(kind: str, name: str | None) -> None:
    assert profile_name(kind, name) == "a"


def test_other_kinds_are_refused_before_any_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollback", "deployment", "web", "--kubeconfig", "/nonexistent"]) == 2
    assert capsys.readouterr().err == (
        'error: unknown resource "deployment": history is kept for SchedulerProfiles (sp)\n'
    )
    with pytest.raises(LiveError, match="name is required"):
        profile_name("sp", None)


def test_rollback_goes_to_the_newest_revision_before_the_one_in_force() -> None:
    revisions = [rev("p-1", 1), rev("p-2", 2), rev("p-3", 3)]
    assert pick(revisions, "p-3", None)["revision"] == 2
    assert pick(revisions, "p-2", None)["revision"] == 1  # after a rollback to 2
    assert pick(revisions, "p-3", 1)["revision"] == 1
    with pytest.raises(LiveError, match=r"revision 7 not found \(revisions: 1, 2, 3\)"):
        pick(revisions, "p-3", 7)
    with pytest.raises(LiveError, match="no earlier revision"):
        pick([rev("p-1", 1)], "p-1", None)


def test_history_marks_the_revision_in_force() -> None:
    table = history_table(
        {"status": {"currentRevision": "p-2"}},
        [rev("p-1", 1, **{"multisched.dev/generation": "1"}), rev("p-2", 2)],
    )
    header, first, second = table.splitlines()
    assert header.split() == ["REVISION", "IN", "FORCE", "GENERATION", "CREATED", "CHANGE-CAUSE"]
    assert first.split() == ["1", "1"]
    assert second.split() == ["2", "*"]


def revision(name: str, namespace: str, number: int, uid: str, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"multisched.dev/schedulerprofile-uid": uid},
        "annotations": {"multisched.dev/generation": str(number)},
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "multisched.dev/v1alpha1", "kind": "SchedulerProfile", "uid": owner}
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": {"spec": {"profiles": [{"schedulerName": name}]}},
        "revision": number,
    }


async def test_only_owned_revisions_in_the_operators_namespace_are_read(live: LiveCluster) -> None:
    profile = await live.create(
        "schedulerprofiles",
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "p"},
            "spec": {"profiles": [{"schedulerName": "p-3"}]},
            "status": {"currentRevision": "p-3", "revision": 3},
        },
    )
    uid = profile["metadata"]["uid"]
    for rev in (
        revision("p-1", "multisched", 1, uid, uid),
        revision("p-3", "multisched", 3, uid, uid),
        revision("planted", "team-a", 2, uid, uid),  # another namespace, however labelled
        revision("unowned", "multisched", 2, uid, None),  # the label alone
        revision("other", "multisched", 2, uid, "uid-of-another"),
    ):
        path = f"/apis/apps/v1/namespaces/{rev['metadata']['namespace']}/controllerrevisions"
        async with live.kmock.post(path, json=rev) as resp:
            assert resp.status in (200, 201), await resp.text()

    code, out, err = await live.run("history", "sp", "p", "--scheduler-namespace", "multisched")
    assert code == 0, err
    assert [row.split()[0] for row in out.splitlines()[2:]] == ["1", "3"]
    code, out, err = await live.run(
        "rollback", "sp", "p", "--to-revision", "2", "--scheduler-namespace", "multisched"
    )
    assert (code, err) == (2, "error: revision 2 not found (revisions: 1, 3)\n")
    assert [r.method for r in live.writes() if "schedulerprofiles" in r.url.path] == ["POST"]
    # The context names no namespace: "default", where the operator keeps none here.
    code, out, _ = await live.run("history", "sp", "p")
    assert code == 0
    assert out.startswith("schedulerprofile/p has no revisions in namespace default yet")
