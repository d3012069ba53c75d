# multisched developer targets. Everything installs into .venv; helm is fetched pinned.
PYTHON_BOOT ?= python3
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP ?= $(VENV)/bin/pip
PYTEST_ARGS ?=

.PHONY: install lock test lint bench bench-e2e e2e run simulate clean

# Dependencies come from the hashed lock (requirements-dev.lock: runtime + dev; the image uses
# requirements.lock, runtime only); the project itself is installed without resolving again.
# After editing pyproject.toml's dependencies: make lock.
$(VENV)/.installed: pyproject.toml requirements-dev.lock
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet --require-hashes -r requirements-dev.lock
	$(PIP) install --quiet --no-deps -e .
	$(PIP) install --quiet --no-deps -e examples/plugin
	touch $@

lock:
	$(PYTHON_BOOT) -m venv .cache/pip-tools
	.cache/pip-tools/bin/pip install --quiet pip-tools
	.cache/pip-tools/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
		--no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml
	.cache/pip-tools/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
		--no-emit-index-url --no-emit-find-links --extra dev -o requirements-dev.lock pyproject.toml

install: $(VENV)/.installed

-include mk/helm.mk
-include mk/k8s.mk

test: install $(HELM)
	HELM=$(abspath $(HELM)) $(VENV)/bin/pytest -q --ignore=tests/e2e $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check operator tests examples bench
	$(VENV)/bin/ruff format --check operator tests examples bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

bench: install
	$(PYTHON) -m bench

# multisched beside kube-scheduler on a real etcd + kube-apiserver (skips when they are not on
# PATH); BENCH_E2E_SCALE=0.1 for a quick run.
bench-e2e: install
	@# kube-scheduler and the control plane from `make k8s` come first on PATH.
	@# Bytecode, as an installed wheel has it: an editable install under PYTHONDONTWRITEBYTECODE
	@# would compile every module at every start (60 ms of each first binding).
	$(PYTHON) -m compileall -q operator/multisched
	PATH="$(K8S_PATH)" $(PYTHON) -m bench.e2e $(BENCH_E2E_ARGS)

# The e2e suite and its parity tests run on the v1.37.2 control plane that `make k8s` builds
# (.cache/k8s/v1.37.2/bin, first on PATH); without it they skip with a message.
e2e: install
	PATH="$(K8S_PATH)" $(VENV)/bin/pytest -q -rs tests/e2e $(PYTEST_ARGS)

simulate: install
	$(VENV)/bin/multisched simulate examples/cluster/seeds-walkthrough.yaml

# Run the operator locally against the current kubeconfig context (kind, for example).
run: install
	kubectl apply -f crds/
	kubectl apply -f examples/profiles/my-scheduler.yaml
	$(VENV)/bin/kopf run --all-namespaces --standalone -m multisched.operator

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache
