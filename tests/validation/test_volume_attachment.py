"""VolumeAttachment as the API server validates it (``ValidateVolumeAttachment`` in
pkg/apis/storage/validation): the fields NodeVolumeLimits reads."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.validation import Document, object_problems

NOT_A_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ONE_OF = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def attachment(**spec: Any) -> dict[str, Any]:
    body = {
        "attacher": "ebs.csi.aws.com",
        "nodeName": "n1",
        "source": {"persistentVolumeName": "pv1"},
    }
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va1"},
        "spec": {**body, **spec},
    }


def problems(obj: dict[str, Any]) -> list[str]:
    return object_problems(Document("c.yaml", "document 1", obj))


def test_a_valid_attachment() -> None:
    assert problems(attachment()) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"attacher": "Not_A_Driver"},
            [f'spec.attacher: Invalid value: "Not_A_Driver": {NOT_A_SUBDOMAIN}'],
        ),
        ({"attacher": "a" * 64}, ["spec.attacher: Too long: must have at most 63 bytes"]),
        ({"source": {}}, [f"spec.source: Required value: {ONE_OF}"]),
        (
            {"source": {"persistentVolumeName": "pv1", "inlineVolumeSpec": {}}},
            [f"spec.source: Forbidden: {ONE_OF}"],
        ),
        (
            {"source": {"persistentVolumeName": ""}},
            ["spec.source.persistentVolumeName: Required value: must specify non empty "
             "persistentVolumeName"],
        ),
        ({"nodeName": "N_1"}, [f'spec.nodeName: Invalid value: "N_1": {NOT_A_SUBDOMAIN}']),
    ],
    ids=["attacher format", "attacher length", "no source", "two sources", "empty PV name",
         "node name"],
)  # fmt: skip
def test_what_the_api_server_refuses(spec: dict[str, Any], expected: list[str]) -> None:
    assert problems(attachment(**spec)) == expected
