# syntax=docker/dockerfile:1
# The base image is pinned by digest (the tag beside it says what it is). To move to a newer
# python:3.11-slim: docker buildx imagetools inspect python:3.11-slim, and replace both.
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# --- builder: the locked dependencies (hash-checked) and the wheel into a venv -----------
# The installers are uninstalled after: no part of the runtime (venv's setuptools 65.5
# also carries CVE-2022-40897 and CVE-2024-6345).
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes -r requirements.lock \
 && python -m pip wheel --no-deps --wheel-dir /dist . \
 && /opt/venv/bin/pip install --no-deps /dist/*.whl \
 && /opt/venv/bin/multisched --help >/dev/null \
 && /opt/venv/bin/pip uninstall --yes setuptools wheel pip

# --- final: the interpreter from the same base plus the venv, nothing else ---
# The base image's own installers in /usr/local go too: nothing is installed at run time,
# and its setuptools carries the same CVEs. The check fails the build if one is left.
FROM ${PYTHON_IMAGE}
RUN python -m pip uninstall --yes --disable-pip-version-check pip setuptools wheel \
 && rm -rf /usr/local/lib/python3*/ensurepip/_bundled \
 && python -c "import importlib.util as u, sys; \
sys.exit([m for m in ('pip', 'setuptools', 'wheel') if u.find_spec(m)] or None)"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["multisched"]
CMD ["run"]
