"""What lint-imports cannot see: a name taken from a package's re-exports.

import-linter's graph holds modules, not names: ``from multisched.cache import Cache`` is an
import of the package multisched.cache, whose data types (PodInfo, NodeInfo, ...) the operator
may use. The engine's cache (multisched.cache.cache, multisched.cache.comparer) is the
scheduler's, so the `engine` contract in pyproject.toml covers those modules and this test
covers the names the package re-exports from them.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from importlib.util import find_spec, resolve_name
from pathlib import Path

ENGINE_MODULES = frozenset({"multisched.cache.cache", "multisched.cache.comparer"})
PACKAGE = "multisched.cache"


def engine_names(source: str, module: str, is_package: bool = False) -> Iterator[str]:
    """Each name ``module`` takes from multisched.cache that is defined in the engine's
    cache, as ``line: name``."""
    here = module if is_package else module.rpartition(".")[0]
    exported = importlib.import_module(PACKAGE)
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        name = "." * node.level + (node.module or "")
        if resolve_name(name, here) != PACKAGE:
            continue
        for alias in node.names:
            taken = exported.__all__ if alias.name == "*" else [alias.name]
            for each in taken:
                if getattr(getattr(exported, each, None), "__module__", None) in ENGINE_MODULES:
                    yield f"{node.lineno}: {each}"


def operator_modules() -> Iterator[tuple[str, Path]]:
    spec = find_spec("multisched.operator")  # located, not run: importing registers handlers
    assert spec is not None and spec.submodule_search_locations
    root = Path(spec.submodule_search_locations[0])
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(("multisched.operator", *parts)), path


def test_the_operator_takes_no_name_of_the_engines_cache_from_the_cache_package() -> None:
    taken = [
        f"{module}:{where}"
        for module, path in operator_modules()
        for where in engine_names(path.read_text(), module, path.name == "__init__.py")
    ]
    assert taken == []


def test_engine_names_are_found_however_they_are_imported() -> None:
    source = (
        "from multisched.cache import Cache, PodInfo\n"
        "from ..cache import Snapshot as Snap\n"
        "from multisched.cache.pod_info import PodInfo\n"
        "from multisched.cache import *\n"
    )
    found = list(engine_names(source, "multisched.operator.debug"))
    assert found[:2] == ["1: Cache", "2: Snapshot"]
    assert {"4: Cache", "4: Snapshot"} <= set(found[2:])
    assert not [f for f in found if f.endswith(("PodInfo", "Resource", "NodeInfo"))]
