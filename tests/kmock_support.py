"""What every kmock-backed test needs: a kubeconfig for it, the SchedulerProfile kind,
kmock 0.8's namespace-list path read as the cluster-scoped list it is, and scripted
TokenReviews and SubjectAccessReviews for the secure port."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request, ResourceInfo, Response
from kmock._internal import parsing as kmock_parsing

PROFILES = "multisched.dev/v1alpha1/schedulerprofiles"


def write_kubeconfig(
    path: Path,
    url: str,
    *,
    token: str = "test-token",
    namespace: str | None = None,
    ca: Path | None = None,
) -> Path:
    """A kubeconfig for ``url``; a context namespace and the cluster's CA when given."""
    context = f", namespace: {namespace}" if namespace else ""
    ca_data = (
        f', certificate-authority-data: "{base64.b64encode(ca.read_bytes()).decode()}"'
        if ca
        else ""
    )
    path.write_text(
        f"""
apiVersion: v1
kind: Config
current-context: kmock
clusters:
  - name: kmock
    cluster: {{server: "{url}"{ca_data}}}
users:
  - name: kmock
    user: {{token: {token}}}
contexts:
  - name: kmock
    context: {{cluster: kmock, user: kmock{context}}}
"""
    )
    return path


def declare_kinds(kmock: KubernetesEmulator) -> None:
    """The built-in kinds, and SchedulerProfiles with their status subresource."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # kmock's importlib use
        kmock.resources.load_bundled()
    kmock.resources[PROFILES] = ResourceInfo(
        kind="SchedulerProfile",
        singular="schedulerprofile",
        namespaced=False,
        verbs={"get", "list", "watch", "patch", "update", "create", "delete"},
        subresources={"status"},
    )


def namespaces_listable(monkeypatch: pytest.MonkeyPatch) -> None:
    """kmock 0.8 reads ``/api/v1/namespaces`` as "namespace <missing>" and answers 500;
    parse it as the cluster-scoped ``namespaces`` resource it is."""
    original = kmock_parsing.parse_path

    def parse_path(path: str) -> kmock_parsing.ParsedPath:
        if path.strip("/").split("/") == ["api", "v1", "namespaces"]:
            return kmock_parsing.ParsedPath("", "v1", "namespaces")
        return original(path)

    monkeypatch.setattr(kmock_parsing, "parse_path", parse_path)


def answer_reviews(
    kmock: KubernetesEmulator,
    users: Mapping[str, str],
    allowed: Collection[tuple[str, str]],
) -> None:
    """The API server's TokenReview and SubjectAccessReview, scripted: ``users`` maps a
    token to its user name; ``allowed`` holds the (user, path) pairs a ``get`` may read."""

    def forget_reviews() -> None:
        # kmock stores each posted review (nameless) as an object and answers the next
        # one 409; the API server keeps none.
        for key in [k for k in kmock.objects if "reviews" in str(k)]:
            del kmock.objects[key]

    def token_review(request: Request) -> Response:
        forget_reviews()
        name = users.get(request.data["spec"]["token"])
        status: dict[str, Any] = {"authenticated": name is not None}
        if name is not None:
            status["user"] = {"username": name, "groups": ["system:authenticated"]}
        return Response(status=201, payload={**request.data, "status": status})

    def access_review(request: Request) -> Response:
        forget_reviews()
        spec = request.data["spec"]
        attrs = spec["nonResourceAttributes"]
        ok = attrs["verb"] == "get" and (spec["user"], attrs["path"]) in allowed
        return Response(status=201, payload={**request.data, "status": {"allowed": ok}})

    def plural(name: str) -> Callable[[Request], bool]:
        return lambda r: r.resource is not None and r.resource.plural == name

    kmock[plural("tokenreviews")] << token_review
    kmock[plural("subjectaccessreviews")] << access_review
