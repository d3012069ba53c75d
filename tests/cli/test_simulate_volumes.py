"""``multisched simulate`` with persistent volumes: the example file, the per-pod volume
report, and storage objects checked as the API server checks them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from multisched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "volumes.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_volumes_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", str(EXAMPLE), "-o", "json")
    assert code == 0, err
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    web = pods["default/web"]
    assert (web["status"], web["node"]) == ("Scheduled", "n2")  # its local PV, not emptier n1
    assert web["volumes"] == [{"claim": "data", "volume": "pv-n2"}]
    orphan = pods["default/orphan"]
    assert orphan["status"] == "Unschedulable"
    assert 'persistentvolumeclaim "missing" not found' in orphan["message"]
    worker = pods["default/worker"]
    (claim,) = worker["volumes"]
    assert claim["selectedNode"] == worker["node"]
    assert claim["volume"].startswith("pvc-")


def test_the_table_names_the_volumes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(EXAMPLE))
    assert code == 0
    (web,) = [line for line in out.splitlines() if line.startswith("default/web")]
    assert web.split()[2:] == ["Scheduled", "n2", "volumes:", "data->pv-n2"]
    assert "(provisioned, selected-node n1)" in out


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("capacity: {storage: 10Gi}", "capacity: {storage: 10Gx}"),
            "document 4 (PersistentVolume pv-n2): spec.capacity[storage]: Invalid value: "
            '"10Gx": quantities must match',
        ),
        (
            ("local: {path: /mnt/disk}", "local: {path: /mnt/disk}\n  hostPath: {path: /x}"),
            "document 4 (PersistentVolume pv-n2): spec.local: Forbidden: may not specify "
            "more than 1 volume type",
        ),
        (
            ("volumeBindingMode: WaitForFirstConsumer", "volumeBindingMode: Later"),
            'document 3 (StorageClass local): volumeBindingMode: Unsupported value: "Later"',
        ),
        (
            (
                "accessModes: [ReadWriteOnce]\n  storageClassName: local\n  resources",
                "accessModes: [WriteSometimes]\n  storageClassName: local\n  resources",
            ),
            "document 5 (PersistentVolumeClaim default/data): spec.accessModes: Unsupported "
            'value: "WriteSometimes"',
        ),
    ],
)
def test_bad_storage_objects_are_refused_with_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], problem: str
) -> None:
    text = EXAMPLE.read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(edit[0], edit[1], 1))
    code, out, err = run(capsys, "simulate", str(bad))
    assert code == 2
    assert out == ""
    assert f"error: bad.yaml: {problem}" in err
    assert "Traceback" not in err
