"""The plugin registry: built-ins plus anything installed under ``multisched.plugins``.

A plugin is registered as its class: ``name`` and optional ``args_model`` are class
attributes, ``__init__(args, handle)`` builds it, and the extension points it implements
are read from the methods it defines. A pip-installed package adds one with::

    [project.entry-points."multisched.plugins"]
    MyPlugin = "my_package.module:MyPlugin"
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from .interfaces import EXTENSION_METHODS

ENTRY_POINT_GROUP = "multisched.plugins"

logger = logging.getLogger(__name__)


class RegistryError(Exception):
    pass


class PluginEntry:
    """A registered plugin class; satisfies ``config.catalog.PluginSpec``."""

    __slots__ = ("_args_model", "_extension_points", "_name", "factory")

    def __init__(self, factory: type[Any]) -> None:
        name = getattr(factory, "name", None)
        if not isinstance(name, str) or not name:
            raise RegistryError(f"plugin class {factory!r} has no 'name' attribute")
        points = frozenset(
            point
            for point, method in EXTENSION_METHODS.items()
            if callable(getattr(factory, method, None))
        )
        if not points:
            raise RegistryError(f"plugin {name} implements no extension point")
        args_model = getattr(factory, "args_model", None)
        if args_model is not None and not (
            isinstance(args_model, type) and issubclass(args_model, BaseModel)
        ):
            raise RegistryError(f"plugin {name}: args_model must be a pydantic model class")
        self._name = name
        self._extension_points = points
        self._args_model: type[BaseModel] | None = args_model
        self.factory = factory

    @property
    def name(self) -> str:
        return self._name

    @property
    def extension_points(self) -> frozenset[str]:
        return self._extension_points

    @property
    def args_model(self) -> type[BaseModel] | None:
        return self._args_model


class Registry(Mapping[str, PluginEntry]):
    def __init__(self, plugins: Iterable[type[Any]] = ()) -> None:
        self._entries: dict[str, PluginEntry] = {}
        for cls in plugins:
            self.register(cls)

    def register(self, factory: type[Any]) -> None:
        entry = PluginEntry(factory)
        if entry.name in self._entries:
            raise RegistryError(f"plugin {entry.name} is already registered")
        self._entries[entry.name] = entry

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register every installed plugin of ``group``; a broken one is logged, not fatal."""
        loaded = []
        for ep in entry_points(group=group):
            try:
                self.register(ep.load())
            except Exception:
                logger.exception("could not load scheduler plugin %s from %s", ep.name, ep.value)
                continue
            loaded.append(ep.name)
        return loaded

    def __getitem__(self, name: str) -> PluginEntry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
