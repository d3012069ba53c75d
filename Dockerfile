# syntax=docker/dockerfile:1
ARG PYTHON_IMAGE=python:3.11-slim

# --- builder: build the wheel and install it with its dependencies into a venv ---
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m pip wheel --no-deps --wheel-dir /dist . \
 && python -m venv /opt/venv \
 && /opt/venv/bin/pip install /dist/*.whl \
 && /opt/venv/bin/pip uninstall --yes pip \
 && /opt/venv/bin/multisched --help >/dev/null

# --- final: the interpreter from the same base plus the venv, nothing else ---
FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["multisched"]
CMD ["run"]
