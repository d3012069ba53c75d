"""kubernetes_asyncio's generated packages, loaded name by name.

``kubernetes_asyncio.client`` imports all of its API classes and models when it is first
imported: about 850 modules, 0.15-0.2 s of CPU, paid at every start (kopf imports it too, to
recognise its models). multisched uses a handful of them. ``install`` puts a finder in front
of the import system that loads the package modules below with the same names, each one
imported from the module its ``__init__`` names, on first use.

A package is taken lazily only if its ``__init__`` holds nothing but a docstring, absolute
imports and literal assignments (``__all__``, ``__version__``). If it holds anything else
(an upgrade might add code), or imports from the package itself, the package is imported as
usual.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

#: The packages whose ``__init__`` imports every module of theirs.
KUBERNETES_ASYNCIO = frozenset(
    {
        "kubernetes_asyncio",
        "kubernetes_asyncio.client",
        "kubernetes_asyncio.client.api",
        "kubernetes_asyncio.client.models",
    }
)


class Plan:
    """What a package's ``__init__`` binds: constants, and names to import on first use."""

    __slots__ = ("constants", "names")

    def __init__(self, constants: dict[str, Any], names: dict[str, tuple[str, str]]) -> None:
        self.constants = constants
        #: name -> (module, attribute); an attribute of "" means the module itself.
        self.names = names


def plan(source: str, package: str) -> Plan | None:
    """The plan of ``package``'s ``__init__``, or None if it does anything but import and
    assign (or imports from the package itself, which only an eager import resolves)."""
    constants: dict[str, Any] = {}
    names: dict[str, tuple[str, str]] = {}
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        constants["__doc__"] = body[0].value.value
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:  # bound as the eager import binds it
                constants[alias.asname or alias.name] = getattr(__future__, alias.name, None)
            continue
        if isinstance(node, ast.ImportFrom) and node.module == package:
            return None
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound = alias.asname or alias.name
                names[bound] = (node.module, alias.name)
                constants.pop(bound, None)  # the later binding wins, as in the module
        elif isinstance(node, ast.Import) and all(alias.asname for alias in node.names):
            for alias in node.names:
                names[str(alias.asname)] = (alias.name, "")
                constants.pop(str(alias.asname), None)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):  # not a literal
                return None
            names.pop(node.targets[0].id, None)
        else:
            return None
    return Plan(constants, names)


class _LazyLoader(importlib.abc.Loader):
    def __init__(self, plan: Plan, files: Any) -> None:
        self._plan = plan
        #: The path finder's loader: the package's files are read through it.
        self._files = files

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module

    def get_resource_reader(self, fullname: str) -> Any:  # importlib.resources
        return self._files.get_resource_reader(fullname)

    def get_data(self, path: str) -> bytes:  # pkgutil.get_data
        data: bytes = self._files.get_data(path)
        return data

    def exec_module(self, module: types.ModuleType) -> None:
        names = self._plan.names
        package = module.__name__

        def resolve(name: str) -> Any:
            where = names.get(name)
            if where is None and (name.startswith("__") or "." in name):  # a probe, no module
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            try:
                if where is None:  # a submodule the eager __init__ would have imported
                    value: Any = importlib.import_module(f"{package}.{name}")
                elif where[1]:  # from M import N: N may be a submodule of M
                    value = getattr(__import__(where[0], fromlist=[where[1]]), where[1])
                else:
                    value = importlib.import_module(where[0])
            except ModuleNotFoundError as exc:
                if where is not None or exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
            setattr(module, name, value)
            return value

        def listing() -> list[str]:
            return sorted(set(vars(module)) | set(names))

        vars(module).update(self._plan.constants)
        module.__getattr__ = resolve  # type: ignore[method-assign]  # PEP 562
        module.__dir__ = listing  # type: ignore[method-assign]


class LazyPackages(importlib.abc.MetaPathFinder):
    """Finds the named packages as the path finder does, and loads them lazily when their
    ``__init__`` allows it."""

    def __init__(self, packages: Iterable[str]) -> None:
        self.packages = frozenset(packages)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.packages:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or real.origin is None or real.submodule_search_locations is None:
            return None
        try:
            with open(real.origin, encoding="utf-8") as file:
                found = plan(file.read(), fullname)
        except (OSError, SyntaxError, ValueError, RecursionError):  # unreadable: as usual
            return None
        if found is None:
            return None
        spec = importlib.machinery.ModuleSpec(
            fullname, _LazyLoader(found, real.loader), origin=real.origin, is_package=True
        )
        spec.submodule_search_locations = real.submodule_search_locations
        spec.has_location = True
        return spec


def install(packages: Iterable[str] = KUBERNETES_ASYNCIO) -> None:
    """Load ``packages`` lazily from now on (once per process; those already imported stay
    as they are)."""
    wanted = frozenset(packages)
    if not any(isinstance(f, LazyPackages) and f.packages == wanted for f in sys.meta_path):
        sys.meta_path.insert(0, LazyPackages(wanted))
