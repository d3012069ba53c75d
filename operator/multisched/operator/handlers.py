"""The kopf handlers: ``kopf run -A -m multisched.operator`` (or ``multisched run``).

Nothing is stored on watched objects: no finalizers, no progress annotations, no diff-base.

- Pods, nodes, namespaces and PDBs feed the cache from *index* handlers. kopf runs index
  handlers for the initial listing of every indexed resource before it runs any other
  handler, so no SchedulerProfile is applied (and nothing is scheduled) before the cache
  holds every node and bound pod - upstream's WaitForCacheSync. Index handlers see
  listings, additions and modifications; deletions come through ``on.event``.
- SchedulerProfiles are reconciled level-style from ``on.event``: each event carries the
  whole object, the book skips generations it has seen, and statuses are written only when
  they differ, so re-listings after a dropped watch are no-ops. Deletion needs no finalizer.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import kopf

from .depth import NoDiffBase, allow_api_depth
from .options import Options
from .profiles import GROUP, PLURAL, VERSION
from .runtime import Runtime

logger = logging.getLogger(__name__)


def _runtime(memo: Any) -> Runtime:
    runtime: Runtime = memo.runtime
    return runtime


def _deleted(type: str, **_: Any) -> bool:
    return type == "DELETED"


def configure(settings: kopf.OperatorSettings) -> None:
    # Leader election is our own Lease; kopf's peering would pause the watches instead.
    settings.peering.standalone = True
    # Survive the deepest objects the API server stores (see depth.py).
    settings.persistence.diffbase_storage = NoDiffBase()
    allow_api_depth()


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    configure(settings)
    options = memo.get("options")
    if not isinstance(options, Options):
        options = Options.from_env()
    try:
        runtime = await Runtime.create(options)
    except Exception as exc:
        raise kopf.PermanentError(f"cannot load the cluster credentials: {exc}") from exc
    try:
        await runtime.start()
    except Exception as exc:  # e.g. the health port is taken: retrying will not help
        await runtime.stop()
        raise kopf.PermanentError(f"cannot start: {exc}") from exc
    memo.runtime = runtime


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    runtime = memo.get("runtime")
    if isinstance(runtime, Runtime):
        await runtime.stop()


@kopf.on.login()
async def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo | None:
    """kopf watches with the credentials the runtime loaded (same source, same refresh)."""
    runtime = memo.get("runtime")
    cfg = runtime.configuration if isinstance(runtime, Runtime) else None
    if cfg is None:
        return None
    header: Any = cfg.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    parts = str(header).split(" ", 1) if header else []
    scheme, token = (
        (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    )
    return kopf.ConnectionInfo(
        server=str(cfg.host),
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        username=cfg.username or None,
        password=cfg.password or None,
        scheme=scheme,
        token=token,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        proxy_url=cfg.proxy,
    )


# -- pods --------------------------------------------------------------------------------


@kopf.index("", "v1", "pods")
async def pod_seen(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await _runtime(memo).on_pod(body)


@kopf.on.event("", "v1", "pods", when=_deleted)
async def pod_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_pod_deleted(body)


# -- nodes -------------------------------------------------------------------------------


@kopf.index("", "v1", "nodes")
async def node_seen(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_node(body)


@kopf.on.event("", "v1", "nodes", when=_deleted)
async def node_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_node_deleted(body)


# -- namespaces (labels for namespaceSelector) -------------------------------------------


@kopf.index("", "v1", "namespaces")
async def namespace_seen(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_namespace(body)


@kopf.on.event("", "v1", "namespaces")
async def namespace_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    runtime = _runtime(memo)
    # Non-index handlers run only once every indexed resource is listed: caches are synced.
    runtime.mark_synced()
    if type == "DELETED":
        runtime.on_namespace(body, deleted=True)


# -- PodDisruptionBudgets (preemption) ---------------------------------------------------


@kopf.index("policy", "v1", "poddisruptionbudgets")
async def pdb_seen(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_pdb(body)


@kopf.on.event("policy", "v1", "poddisruptionbudgets", when=_deleted)
async def pdb_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _runtime(memo).on_pdb(body, deleted=True)


# -- SchedulerProfiles -------------------------------------------------------------------


@kopf.on.event(GROUP, VERSION, PLURAL)
async def profile_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    runtime = _runtime(memo)
    runtime.mark_synced()
    await runtime.on_profile(body, deleted=type == "DELETED")
