"""Helpers for the chart/CRD tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "multisched"
CRD_PATH = ROOT / "crds" / "schedulerprofiles.multisched.dev.yaml"
CHART_CRD_PATH = CHART / "crds" / CRD_PATH.name
# scheduler-plugins' PodGroup and ElasticQuota CRDs, as released, and the chart's copy.
SCHEDULER_PLUGINS_CRDS = ROOT / "crds" / "scheduler-plugins"
CHART_SCHEDULER_PLUGINS_CRDS = CHART / "files" / "scheduler-plugins"
RELEASE = "multisched"
NAMESPACE = "multisched"

Manifest = dict[str, Any]


class HelmError(Exception):
    pass


def load_docs(path: Path) -> Iterator[Manifest]:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            yield doc


def by_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d.get("kind") == kind]


# --- the CRD's openAPIV3Schema as JSON Schema ------------------------------------------


def to_json_schema(node: Any) -> Any:
    """Turn a structural OpenAPI v3 schema into JSON Schema the way the API server reads it.

    Unknown fields are refused (as `kubectl apply` does with server-side strict field
    validation) unless x-kubernetes-preserve-unknown-fields; ``nullable`` admits null.
    CEL rules (x-kubernetes-validations) cannot run here; the e2e suite covers them.
    """
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_json_schema(v) for k, v in node.items() if k not in ("nullable", "default")}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (
        node.get("type") == "object"
        and "properties" in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "additionalProperties" not in node
    ):
        out["additionalProperties"] = False
    if "properties" in node:
        out["properties"] = {k: to_json_schema(v) for k, v in node["properties"].items()}
    return out


def _list_map_keys(
    validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """x-kubernetes-list-type: map -- the API server refuses two items with the same keys."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(instance, list):
        return
    seen: set[tuple[Any, ...]] = set()
    for item in instance:
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(k) for k in keys)
        if key in seen:
            yield jsonschema.ValidationError(
                f"Duplicate value: {dict(zip(keys, key, strict=True))}"
            )
        seen.add(key)


CRDValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator, {"x-kubernetes-list-map-keys": _list_map_keys}
)
