"""KubeClient's ResourceClaim writes for DynamicResources' PreBind, PostFilter and
Unreserve, as kmock receives them: PUT of the status subresource (allocation and
reservedFor) and of the claim (its finalizer)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from multisched.operator.client import KubeClient, NotLeader
from multisched.transport import Api, ApiError

PATH = "/apis/resource.k8s.io/v1/namespaces/prod/resourceclaims/gpu"
CLAIM = {
    "metadata": {"namespace": "prod", "name": "gpu", "uid": "u1", "resourceVersion": "7"},
    "spec": {"devices": {"requests": []}},
    "status": {"reservedFor": [{"resource": "pods", "name": "web", "uid": "p1"}]},
}


@pytest.fixture
async def client(kmock: KubernetesEmulator) -> AsyncIterator[KubeClient]:
    api_client = k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))
    kube = KubeClient(Api(api_client), instance="test")
    try:
        yield kube
    finally:
        await kube.close()
        await api_client.close()


def writes(kmock: KubernetesEmulator) -> list[Request]:
    return list(kmock[lambda r: r.method != "GET"])


def answer(status: int, payload: dict[str, Any]) -> Any:
    def respond(request: Request) -> Response:
        return Response(status=status, payload=payload)

    return respond


async def test_the_status_and_the_claim_are_put_with_their_resource_version(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    stored = {**CLAIM, "metadata": {**CLAIM["metadata"], "resourceVersion": "8"}}
    kmock[lambda r: r.method == "PUT"] << answer(200, stored)
    assert await client.update_claim_status(CLAIM) == stored
    assert await client.update_claim(CLAIM) == stored
    status, plain = writes(kmock)
    assert (status.method, str(status.url.path)) == ("PUT", f"{PATH}/status")
    assert (plain.method, str(plain.url.path)) == ("PUT", PATH)
    assert status.data["metadata"]["resourceVersion"] == "7"
    assert status.data["status"] == CLAIM["status"]
    assert (status.data["apiVersion"], status.data["kind"]) == (
        "resource.k8s.io/v1",
        "ResourceClaim",
    )


async def test_a_conflict_is_an_api_error_with_status_409(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    message = 'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "gpu"'
    refusal = {"kind": "Status", "code": 409, "reason": "Conflict", "message": message}
    kmock[lambda r: r.method == "PUT"] << answer(409, refusal)
    with pytest.raises(ApiError) as err:
        await client.update_claim_status(CLAIM)
    assert err.value.status == 409 and message in str(err.value)


async def test_a_replica_that_is_not_leading_writes_no_claim(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.may_write = lambda: False
    with pytest.raises(NotLeader):
        await client.update_claim_status(CLAIM)
    with pytest.raises(NotLeader):
        await client.update_claim(CLAIM)
    assert writes(kmock) == []
