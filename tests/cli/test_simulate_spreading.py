"""``multisched simulate`` with Services and pod controllers: default spreading reads their
selectors (the example file), and they are checked as the API server checks them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from multisched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "spreading.yaml"
SEEDS = range(8)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def placements(capsys: pytest.CaptureFixture[str], path: Path, pod: str) -> set[str]:
    """Where ``pod`` goes, over several tie-breaking seeds."""
    nodes = set()
    for seed in SEEDS:
        code, out, err = run(capsys, "simulate", str(path), "-o", "json", "--seed", str(seed))
        assert code == 0, err
        (row,) = [p for p in json.loads(out)["pods"] if p["pod"] == pod]
        nodes.add(row["node"])
    return nodes


def without(text: str, header: str) -> str:
    return "\n---\n".join(d for d in text.split("\n---\n") if header not in d)


def test_a_service_spreads_the_pods_it_selects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert placements(capsys, EXAMPLE, "default/web-1") == {"b1"}
    # Without the Service, web-0 is no sibling: the two nodes tie and either may win.
    alone = tmp_path / "alone.yaml"
    alone.write_text(without(EXAMPLE.read_text(), "kind: Service\n"))
    assert placements(capsys, alone, "default/web-1") == {"a1", "b1"}


STATEFUL_SET = """
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, version: v2}}
    spec: {containers: [{name: web, image: nginx}]}
"""
OWNED = """metadata:
  name: web-1
  labels: {app: web, version: v2}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: u1, controller: true}]
"""


def test_a_stateful_set_spreads_its_pods_of_every_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = without(EXAMPLE.read_text(), "kind: Service\n")
    text = text.replace("metadata: {name: web-1, labels: {app: web}}\n", OWNED)
    path = tmp_path / "set.yaml"
    path.write_text(text + STATEFUL_SET)
    assert placements(capsys, path, "default/web-1") == {"b1"}  # web-0 (no version) counts


CONTAINERS = "spec: {containers: [{name: c, image: x}]}"
#: Each document, and the API server's (v1.37.2) lines for it, word for word as
#: ``kubectl create --dry-run=server`` printed them.
BAD_WORKLOADS = {
    "service": (
        "apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\n"
        "spec: {selector: {app: 'a b'}, ports: [{port: 80}]}",
        [
            # A leading digit is fine since RelaxedServiceNameValidation (GA in v1.37).
            'Service default/1web): spec.selector: Invalid value: "a b": a valid label must be '
            "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ],
    ),
    "replica set without a selector": (
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\n"
        f"spec: {{template: {{metadata: {{labels: {{app: db}}}}, {CONTAINERS}}}}}",
        [
            "ReplicaSet default/rs): spec.selector: Required value",
            "ReplicaSet default/rs): spec.template.metadata.labels: Invalid value: "
            '{"app":"db"}: `selector` does not match template `labels`',
        ],
    ),
    "replica set, template without labels": (
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\n"
        f"spec: {{selector: {{matchLabels: {{app: web}}}}, template: {{{CONTAINERS}}}}}",
        [
            "ReplicaSet default/rs): spec.template.metadata.labels: Invalid value: null: "
            "`selector` does not match template `labels`"
        ],
    ),
    "replica set, selector upstream cannot read": (
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\n"
        "spec: {selector: {matchExpressions: [{key: a, operator: Bogus}]},\n"
        f"       template: {{metadata: {{labels: {{app: db}}}}, {CONTAINERS}}}}}",
        [
            "ReplicaSet default/rs): spec.selector.matchExpressions[0].operator: Invalid value: "
            '"Bogus": not a valid selector operator',
            'ReplicaSet default/rs): spec.selector: Invalid value: {"matchExpressions":[{"key":'
            '"a","operator":"Bogus"}]}: invalid label selector',
        ],
    ),
    "stateful set, empty selector": (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: ss}\n"
        "spec: {selector: {}, serviceName: s,\n"
        f"       template: {{metadata: {{labels: {{app: db}}}}, {CONTAINERS}}}}}",
        [
            "StatefulSet default/ss): spec.selector: Invalid value: {}: empty selector is invalid "
            "for statefulset"
        ],
    ),
    "stateful set, a name with dots": (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web.v1}\n"
        "spec: {selector: {matchLabels: {app: db}}, serviceName: s,\n"
        f"       template: {{metadata: {{labels: {{app: db}}}}, {CONTAINERS}}}}}",
        [
            'StatefulSet default/web.v1): metadata.name: Invalid value: "web.v1": '
            "must not contain dots"
        ],
    ),
    "replication controller without selector or template": (
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec: {}",
        [
            "ReplicationController default/rc): spec.selector: Required value",
            "ReplicationController default/rc): spec.template: Required value",
        ],
    ),
}


@pytest.mark.parametrize(("document", "lines"), BAD_WORKLOADS.values(), ids=BAD_WORKLOADS.keys())
def test_bad_workload_objects_are_refused_as_the_api_server_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: str, lines: list[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text() + "\n---\n" + document + "\n")
    code, out, err = run(capsys, "simulate", str(bad))
    assert code == 2
    assert out == ""
    assert err.splitlines() == [f"error: bad.yaml: document 8 ({line}" for line in lines]


def test_a_replication_controller_defaults_its_selector_to_its_template_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = without(EXAMPLE.read_text(), "kind: Service\n").replace(
        "metadata: {name: web-1, labels: {app: web}}\n",
        OWNED.replace("apps/v1, kind: StatefulSet", "v1, kind: ReplicationController"),
    )
    rc = (
        "\n---\napiVersion: v1\nkind: ReplicationController\nmetadata: {name: web}\n"
        "spec: {template: {metadata: {labels: {app: web}}}}\n"
    )
    path = tmp_path / "rc.yaml"
    path.write_text(text + rc)
    assert placements(capsys, path, "default/web-1") == {"b1"}
