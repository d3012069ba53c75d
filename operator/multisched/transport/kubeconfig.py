"""Where the API server is and who we are: in-cluster service account, else a kubeconfig.

One loader for the operator and the live commands, with errors a user can act on.
"""

from __future__ import annotations

import os

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config


class KubeconfigError(Exception):
    """One line: what could not be loaded and why."""


def kubeconfig_path(kubeconfig: str | None = None) -> str:
    """``kubeconfig``, else the first file of $KUBECONFIG (read now, not at import), else
    ~/.kube/config."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
    return os.path.expanduser(path or "~/.kube/config")


async def load_configuration(kubeconfig: str | None = None) -> k8s.Configuration:
    """In-cluster service account (unless a kubeconfig is named), else the kubeconfig."""
    cfg = k8s.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=cfg, try_refresh_token=True
            )
        except Exception as exc:
            raise KubeconfigError(f"cannot load the in-cluster configuration: {exc}") from None
        return cfg
    path = kubeconfig_path(kubeconfig)
    if not os.path.exists(path):
        # kubernetes_asyncio reads a missing file as an empty config ("expected key
        # current-context"); say what is actually missing.
        raise KubeconfigError(
            f"no kubeconfig: {path} not found (set KUBECONFIG or pass --kubeconfig)"
        )
    try:
        await k8s_config.load_kube_config(config_file=path, client_configuration=cfg)
    except Exception as exc:  # ConfigException and friends
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise KubeconfigError(f"cannot load the kubeconfig {path}: {first}") from None
    return cfg
