"""What the parity tests share: the profile names, pod builders, and the profile both
schedulers are given. kube-scheduler itself is the ``kube_scheduler`` fixture (conftest)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # conftest imports this module for UPSTREAM
    from conftest import Kube

#: multisched's profile in the parity tests.
PROFILE = "e2e-parity"
#: kube-scheduler's profile: its own name, so that it leaves other tests' pods alone.
UPSTREAM = "e2e-parity-upstream"


def asking(body: dict[str, Any], cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    body["spec"].update(spec)
    if cpu is not None:
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return body


def term(labels: dict[str, str], topology: str) -> dict[str, Any]:
    """A pod (anti-)affinity term over pods with ``labels``."""
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": topology}


def apply_profile(kube: Kube, fields: dict[str, Any]) -> None:
    """multisched's SchedulerProfile ``PROFILE`` with ``fields`` (as kube-scheduler gets them)."""
    kube.apply(
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": PROFILE},
            "spec": {"profiles": [{"schedulerName": PROFILE, **fields}]},
        }
    )


def tear_down(kube: Kube, pods: list[str], *objects: tuple[str, str]) -> None:
    """A test's pods force-deleted, then its other objects ((kind, name) pairs) and
    multisched's profile: the API server is shared, and a later test's operator would go on
    retrying pods left pending."""
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    for kind, name in (*objects, ("schedulerprofile", PROFILE)):
        kube.run("delete", kind, name, "--ignore-not-found", "--wait=false")
