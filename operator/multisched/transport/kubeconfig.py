"""Where the API server is and who we are: in-cluster service account, else a kubeconfig.

One loader for the operator and the live commands, with errors a user can act on, and the
client built from it. ``ApiClient`` and ``Configuration`` are kubernetes_asyncio's, named
here so that the rooms above pass them around without importing it.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, TypeAlias

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

#: One API server's client: auth (a token refreshed as it expires), TLS, a pooled session.
ApiClient: TypeAlias = k8s.ApiClient
#: Where the API server is and the credentials, as loaded.
Configuration: TypeAlias = k8s.Configuration


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


def connect(configuration: Configuration, user_agent: str) -> ApiClient:
    """A client of the configured API server (close it with ``await client.close()``)."""
    api_client = k8s.ApiClient(configuration)
    api_client.user_agent = user_agent
    return api_client


def server(api_client: ApiClient) -> str:
    """The API server's URL ("" when unknown)."""
    return str(getattr(api_client.configuration, "host", "") or "")


async def bearer_token(api_client: ApiClient) -> str | None:
    """The kubeconfig user's bearer token (None for a client certificate, as kind's admin)."""
    header: Any = api_client.configuration.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    if not header:
        return None
    return str(header).split(" ", 1)[-1]


def cluster_ca_file(api_client: ApiClient) -> str | None:
    """The file kubernetes_asyncio wrote the cluster's certificate-authority-data to (None:
    the kubeconfig trusts the system's CAs)."""
    ca_file = getattr(api_client.configuration, "ssl_ca_cert", None)
    return str(ca_file) if ca_file else None
