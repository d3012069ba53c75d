"""Gangs and quotas offline: ``simulate`` and ``explain`` read PodGroups and ElasticQuotas
(checked as their CRDs check them), place a gang whole or not at all, and say what a gang
is waiting for and how much of a quota is used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from multisched.cli import main
from multisched.config import parse_config_object, resolve
from multisched.live.explain import explain
from multisched.scheduler import default_registry
from multisched.scheduler.simulate import ClusterInput

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "gangs.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def documents(edit: Any = None) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    return edit(docs) if edit else docs


def write(tmp_path: Path, docs: list[dict[str, Any]]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def placements(capsys: pytest.CaptureFixture[str], path: str) -> dict[str, dict[str, Any]]:
    code, out, err = run(capsys, "simulate", path, "-o", "json")
    assert code == 0, err
    return {p["pod"]: p for p in json.loads(out)["pods"]}


def test_the_example_places_the_gang_whole_and_holds_the_quota(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods = placements(capsys, str(EXAMPLE))
    workers = [pods[f"team-a/worker-{i}"] for i in range(3)]
    assert {w["status"] for w in workers} == {"Scheduled"}
    extra = pods["team-a/extra"]
    assert extra["status"] == "Unschedulable"
    assert (
        "Pod team-a/extra is rejected in PreFilter because ElasticQuota team-a is more than Max"
        in extra["message"]
    )


def test_a_gang_that_cannot_fit_places_nobody(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def smaller(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for d in docs:
            if d["kind"] == "Node" and d["metadata"]["name"] == "n2":
                d["status"]["allocatable"]["cpu"] = "1"  # 3 CPUs in all, for 3 + quota room
            if d["kind"] == "ElasticQuota":
                d["spec"]["max"]["cpu"] = "10"
        # Another worker: 4 of 1 CPU each on 3 CPUs.
        worker = next(d for d in docs if d["metadata"]["name"] == "worker-2")
        docs.append({**worker, "metadata": {**worker["metadata"], "name": "worker-3"}})
        group = next(d for d in docs if d["kind"] == "PodGroup")
        group["spec"]["minMember"] = 4
        return docs

    pods = placements(capsys, write(tmp_path, documents(smaller)))
    workers = [pods[f"team-a/worker-{i}"] for i in range(4)]
    assert {w["status"] for w in workers} == {"Unschedulable"}, workers
    messages = " ".join(w["message"] for w in workers)
    assert "PodGroup team-a/train gets rejected due to Pod" in messages
    assert "optimistic rejection in PostFilter" in messages or "rejection in Unreserve" in messages


def test_a_gang_short_of_members_is_refused_before_anything_is_assumed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def short(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [d for d in docs if d["metadata"]["name"] != "worker-2"]

    pods = placements(capsys, write(tmp_path, documents(short)))
    for name in ("worker-0", "worker-1"):
        assert pods[f"team-a/{name}"]["status"] == "Unschedulable"
        assert (
            f"pre-filter pod {name} cannot find enough sibling pods, current pods number: 2, "
            "minMember of group: 3" in pods[f"team-a/{name}"]["message"]
        )


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("spec: {minMember: 3}", "spec: {minMember: three}"),
            'document 6 (PodGroup team-a/train): spec.minMember: Invalid value: "string": '
            "spec.minMember in body must be of type integer",
        ),
        (
            ("spec: {minMember: 3}", "spec: {minMember: 3, maxMember: 5}"),
            'document 6 (PodGroup team-a/train): spec: unknown field "maxMember"',
        ),
        (
            ('spec: {min: {cpu: "1"}, max: {cpu: "3"}}', 'spec: {min: {cpu: "1x"}}'),
            'document 7 (ElasticQuota team-a/team-a): spec.min.cpu: Invalid value: "1x": '
            "quantities must match",
        ),
    ],
)
def test_bad_groups_and_quotas_are_one_line_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: tuple[str, str], problem: str
) -> None:
    text = EXAMPLE.read_text()
    assert edit[0] in text
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    code, out, err = run(capsys, "simulate", str(path))
    assert code == 2 and out == ""
    assert problem in err, err
    assert "Traceback" not in err


async def test_explain_says_what_a_gang_waits_for_and_what_a_quota_holds() -> None:
    docs = documents()
    profile = next(d for d in docs if d["kind"] == "SchedulerProfile")
    cluster = ClusterInput.from_documents(
        (f"document {i}", d) for i, d in enumerate(docs) if d["kind"] != "SchedulerProfile"
    )
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_config_object(profile), registry)
    found = await explain(cluster, config, registry, "team-a", "worker-0", seed=1)
    (placement,) = found.result.placements
    assert placement.status == "Waiting"
    assert "wait at Permit for Coscheduling" in placement.message
    assert "gang team-a/train: 1 of 3 assumed, waiting at Permit, 60 s left" in placement.message
    assert "quota team-a/team-a: cpu 1 used (min 1, max 3)" in placement.message
    # Nothing of team-a is on a node yet (the workers are pending): it fits its quota, and
    # the line counts it where it would go.
    found = await explain(cluster, config, registry, "team-a", "extra", seed=1)
    (placement,) = found.result.placements
    assert placement.status == "Scheduled"
    assert "quota team-a/team-a: cpu 500m used (min 1, max 3)" in placement.message


def test_a_member_already_bound_counts_toward_its_gang(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As scheduler-plugins counts every pod of the group: one runs already, two pend."""

    def one_bound(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        worker = next(d for d in docs if d["metadata"]["name"] == "worker-0")
        worker["spec"]["nodeName"] = "n1"
        return docs

    pods = placements(capsys, write(tmp_path, documents(one_bound)))
    assert pods["team-a/worker-0"]["status"] == "Bound"
    assert {pods[f"team-a/worker-{i}"]["status"] for i in (1, 2)} == {"Scheduled"}


def test_a_gated_pod_is_reported_gated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def gated(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        extra = next(d for d in docs if d["metadata"]["name"] == "extra")
        extra["spec"]["schedulingGates"] = [{"name": "example.com/later"}]
        return docs

    extra = placements(capsys, write(tmp_path, documents(gated)))["team-a/extra"]
    assert (extra["status"], extra["message"]) == (
        "Gated",
        "waiting for scheduling gate(s): example.com/later",
    )


@pytest.mark.timeout(30)
def test_a_gang_whose_members_a_quota_turns_away_in_turn_ends_with_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """team-b's min at 0 leaves 1 CPU of min in all: each member that waits at Permit wakes
    the others, the next is turned away by the quota, and PostFilter rejects the one waiting.
    With no clock to pace it, that cycle used to run forever; now each member stops after
    ATTEMPTS_PER_POD attempts, the pod behind the gang still gets its turn, and a note says
    why the gang's outcomes are what they are."""

    def no_min_for_team_b(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        quota = next(
            d for d in docs if d["kind"] == "ElasticQuota" and d["metadata"]["name"] == "team-b"
        )
        quota["spec"]["min"]["cpu"] = "0"
        return docs

    path = write(tmp_path, documents(no_min_for_team_b))
    code, out, err = run(capsys, "simulate", path, "-o", "json")
    assert code == 0, err
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    workers = [pods[f"team-a/worker-{i}"] for i in range(3)]
    assert {w["status"] for w in workers} == {"Unschedulable"}, workers
    assert any("total ElasticQuota used is more than min" in w["message"] for w in workers)
    # 500m of team-a's 1 CPU of min: the pod queued behind the gang is placed.
    assert pods["team-a/extra"]["status"] == "Scheduled"
    notes = [line for line in err.splitlines() if line.startswith("note: cluster.yaml: ")]
    assert len(notes) == 1, err
    assert "not tried again after 100 attempts" in notes[0]


def test_the_example_needs_no_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", str(EXAMPLE))
    assert code == 0
    assert err == ""
