"""KubeClient's writes for extended resources backed by devices, as kmock receives them:
the claim DynamicResources creates for a pod (and deletes), and the pod's
``status.extendedResourceClaimStatus``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from builders import make_pod, pod_dict
from multisched.operator.client import KubeClient, NotLeader
from multisched.transport import Api, ApiError

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/prod/resourceclaims"


@pytest.fixture
async def client(kmock: KubernetesEmulator) -> AsyncIterator[KubeClient]:
    cfg = k8s.Configuration(host=str(kmock.url).rstrip("/"))
    api_client = k8s.ApiClient(cfg)
    kube = KubeClient(Api(api_client), instance="test")
    try:
        yield kube
    finally:
        await kube.close()
        await api_client.close()


def writes(kmock: KubernetesEmulator) -> list[Request]:
    return list(kmock[lambda r: r.method != "GET"])


def answer(status: int, payload: dict[str, Any] | None = None) -> Any:
    def respond(request: Request) -> Response:
        body = payload or {"kind": "Status", "code": status, "message": f"refused ({status})"}
        return Response(status=status, payload=body)

    return respond


CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {
        "namespace": "prod",
        "generateName": "web-extended-resources-",
        "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
    },
    "spec": {"devices": {"requests": [{"name": "container-0-request-0"}]}},
}


async def test_create_claim_posts_it_and_returns_it_as_stored(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    stored = {**CLAIM, "metadata": {**CLAIM["metadata"], "name": "web-extended-resources-x7k2p"}}
    kmock[lambda r: r.method == "POST"] << answer(201, stored)
    assert await client.create_claim(CLAIM) == stored
    (req,) = writes(kmock)
    assert (req.method, str(req.url.path)) == ("POST", CLAIMS)
    assert req.data == CLAIM


async def test_a_refused_claim_is_an_api_error_with_the_servers_text(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.method == "POST"] << answer(422)
    with pytest.raises(ApiError) as err:
        await client.create_claim(CLAIM)
    assert (err.value.status, str(err.value.message)) == (422, "refused (422)")


NAME = "web-extended-resources-x7k2p"


async def test_delete_claim_with_its_uid_and_a_claim_gone_is_fine(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    claim = {**CLAIM, "metadata": {"namespace": "prod", "name": NAME, "uid": "u1"}}
    kmock.objects["resource.k8s.io/v1/resourceclaims", "prod", NAME] = claim
    await client.delete_claim(claim)
    assert kmock.objects["resource.k8s.io/v1/resourceclaims", "prod", NAME].deleted
    await client.delete_claim(claim)  # gone: 404, no error
    first, second = writes(kmock)
    assert (first.method, str(first.url.path)) == ("DELETE", f"{CLAIMS}/{NAME}")
    assert first.data["preconditions"] == {"uid": "u1"}
    assert second.method == "DELETE"


async def test_the_pods_extended_resource_claim_status_is_patched(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock.objects["v1/pods", "prod", "web"] = pod_dict("web", namespace="prod")
    status = {
        "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "r"}
        ],
        "resourceClaimName": "web-extended-resources-x7k2p",
    }
    await client.set_extended_resource_claim_status(make_pod("web", namespace="prod"), status)
    (req,) = writes(kmock)
    assert str(req.url.path) == "/api/v1/namespaces/prod/pods/web/status"
    assert req.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert req.data == {"status": {"extendedResourceClaimStatus": status}}


async def test_a_replica_that_is_not_leading_writes_no_claim(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.may_write = lambda: False
    with pytest.raises(NotLeader):
        await client.create_claim(CLAIM)
    with pytest.raises(NotLeader):
        await client.delete_claim({"metadata": {"namespace": "prod", "name": "c"}})
    with pytest.raises(NotLeader):
        await client.set_extended_resource_claim_status(make_pod("web"), {})
    assert writes(kmock) == []
