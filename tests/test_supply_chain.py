"""The supply chain: a hashed lock used by CI and the image, a digest-pinned base image, no
installers left in the runtime venv."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+) \\$")


def locked(path: Path) -> dict[str, str]:
    """name -> version; every entry pinned with == and followed by its hashes."""
    lines = path.read_text().splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = REQUIREMENT.match(line)
        if m is None:
            assert not line or line.startswith((" ", "#")), f"{path.name}: unpinned {line!r}"
            continue
        assert lines[i + 1].strip().startswith("--hash=sha256:"), f"{path.name}: {line} unhashed"
        out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def names(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements
    }


def test_every_dependency_is_locked_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = locked(ROOT / "requirements.lock")
    dev = locked(ROOT / "requirements-dev.lock")
    assert names(project["dependencies"]) <= set(runtime)
    assert names(project["optional-dependencies"]["dev"]) <= set(dev)
    for name, version in runtime.items():
        assert dev.get(name) == version, f"{name}: the image and CI must test the same version"


def test_ci_and_the_image_install_from_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "install --quiet --require-hashes -r requirements-dev.lock" in makefile
    assert "--no-deps -e ." in makefile
    assert "make install" in (ROOT / ".ci" / "run").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes -r requirements.lock" in dockerfile
    assert "pip install --no-deps /dist/*.whl" in dockerfile
    assert "!requirements.lock" in (ROOT / ".dockerignore").read_text()


def test_the_base_image_is_pinned_by_digest() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    (image,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile, re.M)
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", image)
    assert dockerfile.count("FROM ${PYTHON_IMAGE}") == 2  # builder and runtime alike


def test_no_installer_is_left_in_the_runtime_venv() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"pip uninstall --yes setuptools wheel pip", dockerfile)


def stages(dockerfile: str) -> list[list[str]]:
    """Each stage's instructions, from its FROM on: continuations joined, comments dropped."""
    lines = re.sub(r"\\\n", " ", dockerfile).splitlines()
    out: list[list[str]] = []
    for line in (ln.strip() for ln in lines):
        if line.startswith("FROM "):
            out.append([])
        if out and line and not line.startswith("#"):
            out[-1].append(line)
    return out


def test_the_final_stage_drops_the_base_images_installers() -> None:
    final = stages((ROOT / "Dockerfile").read_text())[-1]
    assert final[0] == "FROM ${PYTHON_IMAGE}"
    uses = [i for i, line in enumerate(final) if re.search(r"\bpip\b", line)]
    assert uses, "the final stage never removes the base image's pip"
    last = final[uses[-1]]
    # The last instruction naming pip uninstalls the three from the system interpreter.
    assert last.startswith("RUN python -m pip uninstall --yes "), last
    uninstalled = set(re.split(r"[\s&;]+", last.split("uninstall", 1)[1]))
    assert {"pip", "setuptools", "wheel"} <= uninstalled
    assert not any("pip install" in line for line in final)
    assert "USER 65532:65532" in final[uses[-1] :]  # removed as root, before the drop


def test_the_image_leaves_the_cli_extra_out() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    cli = names(project["optional-dependencies"]["cli"])
    assert cli == {"kubernetes-validate", "jsonschema", "referencing"}
    assert not cli & set(locked(ROOT / "requirements.lock"))  # 108 MB the image does not need
    assert cli <= set(locked(ROOT / "requirements-dev.lock"))  # the tests run simulate
