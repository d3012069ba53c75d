"""kubernetes_asyncio's generated packages load name by name: each name binds what the eager
``__init__`` binds, only on first use, and a package whose ``__init__`` does anything else is
imported as usual."""

from __future__ import annotations
import __future__

import importlib.resources
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from multisched.lazy_packages import KUBERNETES_ASYNCIO, LazyPackages, install, plan

ROOT = Path(__file__).resolve().parent.parent

INIT = '''"""A generated package."""
from __future__ import absolute_import
__version__ = "1.0"
from lazypkg.a import A
from lazypkg.b import B as Bee
import lazypkg.sub as sub
__all__ = ["A", "Bee", "sub"]
'''


def test_the_plan_of_an_init_that_only_imports_and_assigns() -> None:
    found = plan(INIT, "lazypkg")
    assert found is not None
    assert found.constants == {
        "__doc__": "A generated package.",
        "absolute_import": __future__.absolute_import,
        "__version__": "1.0",
        "__all__": ["A", "Bee", "sub"],
    }
    assert found.names == {
        "A": ("lazypkg.a", "A"),
        "Bee": ("lazypkg.b", "B"),
        "sub": ("lazypkg.sub", ""),
    }


def test_the_later_binding_of_a_name_wins() -> None:
    imported_last = plan("X = 1\nfrom m import X\n", "pkg")
    assigned_last = plan("from m import X\nX = 1\n", "pkg")
    assert imported_last is not None and assigned_last is not None
    assert (imported_last.constants, imported_last.names) == ({}, {"X": ("m", "X")})
    assert (assigned_last.constants, assigned_last.names) == ({"X": 1}, {})


@pytest.mark.parametrize(
    "extra",
    [
        "def helper():\n    pass\n",
        "from lazypkg.a import *\n",
        "from .a import A\n",
        "import lazypkg.a\n",
        "VALUE = compute()\n",
        "if True:\n    from lazypkg.a import A\n",
        "print('imported')\n",
        "from lazypkg import c\n",  # from itself: resolving it would ask the package again
    ],
)
def test_an_init_that_does_more_has_no_plan(extra: str) -> None:
    assert plan(INIT + extra, "lazypkg") is None


@pytest.fixture
def lazypkg(tmp_path: Path) -> Iterator[Path]:
    """A package ``lazypkg`` in tmp_path whose modules record that they were imported."""
    root = tmp_path / "lazypkg"
    (root / "sub").mkdir(parents=True)
    for name, body in {
        "a": "class A:\n    pass\n",
        "b": "class B:\n    pass\n",
        "c": "C = 3\n",
    }.items():
        (root / f"{name}.py").write_text(f"import sys\nsys.imported.append({name!r})\n{body}")
    (root / "sub" / "__init__.py").write_text("import sys\nsys.imported.append('sub')\n")
    (root / "sub" / "leaf.py").write_text("import sys\nsys.imported.append('leaf')\n")
    (root / "__init__.py").write_text(INIT)
    sys.path.insert(0, str(tmp_path))
    sys.imported = []  # type: ignore[attr-defined]
    finder = LazyPackages({"lazypkg"})
    sys.meta_path.insert(0, finder)
    try:
        yield root
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "lazypkg" or m.startswith("lazypkg.")]:
            del sys.modules[name]
        del sys.imported  # type: ignore[attr-defined]


def test_a_lazy_package_imports_a_module_when_its_name_is_first_used(lazypkg: Path) -> None:
    import lazypkg as pkg  # type: ignore[import-not-found]

    assert sys.imported == []  # type: ignore[attr-defined]
    assert pkg.__doc__ == "A generated package."
    assert pkg.__version__ == "1.0"
    assert pkg.__all__ == ["A", "Bee", "sub"]
    assert pkg.__file__ == str(lazypkg / "__init__.py")
    assert pkg.A.__module__ == "lazypkg.a"
    assert sys.imported == ["a"]  # type: ignore[attr-defined]
    from lazypkg import Bee

    assert Bee.__name__ == "B"
    assert pkg.sub is sys.modules["lazypkg.sub"]
    assert sys.imported == ["a", "b", "sub"]  # type: ignore[attr-defined]
    assert pkg.A is pkg.A  # bound once: no second import
    assert sys.imported == ["a", "b", "sub"]  # type: ignore[attr-defined]
    assert set(dir(pkg)) >= {"A", "Bee", "sub", "__version__"}


def test_a_submodule_the_init_does_not_name_still_resolves(lazypkg: Path) -> None:
    import lazypkg as pkg

    assert pkg.c.C == 3  # the eager __init__ would have left it bound as a side effect
    assert not hasattr(pkg, "missing")
    assert not hasattr(pkg, "__wrapped__")
    assert not hasattr(pkg, "c.C")  # a dotted probe names no submodule
    with pytest.raises(AttributeError, match="'lazypkg' has no attribute 'missing'"):
        pkg.missing  # noqa: B018
    assert sys.imported == ["c"]  # type: ignore[attr-defined]


def test_a_lazy_packages_files_read_as_an_eager_ones(lazypkg: Path) -> None:
    (lazypkg / "data.txt").write_text("payload")
    import lazypkg

    files = importlib.resources.files("lazypkg")
    assert "data.txt" in {entry.name for entry in files.iterdir()}
    assert (files / "data.txt").read_text() == "payload"
    assert pkgutil.get_data("lazypkg", "data.txt") == b"payload"
    assert sys.imported == []  # type: ignore[attr-defined]


def test_a_name_imported_from_a_package_may_be_its_submodule(lazypkg: Path) -> None:
    (lazypkg / "__init__.py").write_text("from lazypkg.sub import leaf\n")
    import lazypkg as pkg

    assert sys.imported == []  # type: ignore[attr-defined]
    assert pkg.leaf is sys.modules["lazypkg.sub.leaf"]  # as `from M import N` finds it
    assert sys.imported == ["sub", "leaf"]  # type: ignore[attr-defined]


def test_a_package_whose_init_does_more_is_imported_as_usual(lazypkg: Path) -> None:
    (lazypkg / "__init__.py").write_text(INIT + "def helper():\n    return 1\n")
    import lazypkg as pkg

    assert sys.imported == ["a", "b", "sub"]  # type: ignore[attr-defined]
    assert pkg.helper() == 1


def test_install_is_once_per_process() -> None:
    before = list(sys.meta_path)
    try:
        install()
        install()
        assert sum(isinstance(f, LazyPackages) for f in sys.meta_path) == 1
    finally:
        sys.meta_path[:] = before


#: Every public name of kubernetes_asyncio's packages, as module.qualname of what it binds.
BINDINGS = f"""
import sys
sys.path.insert(0, {str(ROOT / "operator")!r})
if sys.argv[1] == "lazy":
    from multisched.lazy_packages import install
    install()
import importlib, json
out = {{}}
for package in {sorted(KUBERNETES_ASYNCIO)!r}:
    module = importlib.import_module(package)
    out[package + ":__doc__"] = module.__doc__, getattr(module, "absolute_import", None) is not None
    for name in module.__all__:
        value = getattr(module, name)
        out[package + ":" + name] = getattr(value, "__module__", None), getattr(
            value, "__qualname__", getattr(value, "__name__", None)
        )
print(json.dumps(out))
"""


def _python(code: str, *argv: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_name_binds_what_the_eager_import_binds() -> None:
    lazy, eager = _python(BINDINGS, "lazy"), _python(BINDINGS, "eager")
    assert lazy == eager
    assert '"kubernetes_asyncio.client:V1Pod": ["kubernetes_asyncio.client.models.v1_pod"' in lazy


def test_the_operator_and_kopf_import_a_few_modules_and_the_client_works() -> None:
    code = textwrap.dedent(
        f"""
        import asyncio, json, sys, types
        sys.path.insert(0, {str(ROOT / "operator")!r})
        from multisched import cli
        try:
            cli.main(["validate", "--help"])
        except SystemExit:
            pass
        import kopf, multisched.operator.main
        print(sum(m.startswith("kubernetes_asyncio.") for m in sys.modules))
        from kubernetes_asyncio import client

        async def deserialized():
            async with client.ApiClient() as api:
                answer = types.SimpleNamespace(data=json.dumps({{"metadata": {{"name": "p"}}}}))
                pod = api.deserialize(answer, "V1Pod")
                return type(pod).__name__, pod.metadata.name

        print(*asyncio.run(deserialized()))
        """
    )
    count, pod = _python(code).splitlines()[-2:]  # after the help text
    assert int(count) < 60  # the eager import: over 800
    assert pod == "V1Pod p"
