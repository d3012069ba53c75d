# The reference control plane (issue: today's Kubernetes): kube-apiserver, kube-scheduler,
# kube-controller-manager and kubectl v1.37.2, built from the Go module proxy with hack/k8s's
# go.mod; included by the top-level Makefile. etcd is Debian's etcd-server. Neither is needed by
# `make test`: the e2e suite skips with a message where the binaries are missing.
K8S_VERSION ?= v1.37.2
K8S_BIN := .cache/k8s/$(K8S_VERSION)/bin
K8S_COMMANDS := kube-apiserver kube-scheduler kube-controller-manager kubectl
K8S_BINARIES := $(addprefix $(K8S_BIN)/,$(K8S_COMMANDS))
# What `make e2e` and `make bench-e2e` run with: these binaries ahead of anything on PATH.
K8S_PATH := $(abspath $(K8S_BIN)):$(PATH)
K8S_GO_PARALLEL ?= 2
# What upstream's hack/lib/version.sh stamps, so `--version` and /version say v1.37.2.
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -s -w $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X '$(p).gitVersion=$(K8S_VERSION)' -X '$(p).gitMajor=1' -X '$(p).gitMinor=$(K8S_MINOR)' \
	-X '$(p).gitTreeState=clean' -X '$(p).buildDate=1970-01-01T00:00:00Z')

.PHONY: k8s k8s-smoke e2e-smoke etcd

k8s: $(K8S_BINARIES) etcd

# One go build for all four: the shared packages compile once. Skipped when all are there.
$(K8S_BINARIES) &: hack/k8s/go.mod hack/k8s/go.sum
	mkdir -p $(K8S_BIN)
	cd hack/k8s && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -p $(K8S_GO_PARALLEL) -tags=providerless \
		-trimpath -ldflags "$(K8S_LDFLAGS)" -o $(abspath $(K8S_BIN))/ \
		$(addprefix k8s.io/kubernetes/cmd/,$(K8S_COMMANDS))
	touch $(K8S_BINARIES)

etcd:
	@command -v etcd >/dev/null || { apt-get update -qq && apt-get install -y -qq etcd-server >/dev/null; }
	@etcd --version | head -n 1

# The smoke run on the oldest supported API server: kube-apiserver v1.35 (hack/k8s-v1.35)
# beside v1.37.2's kubectl; `make e2e-smoke` runs the operator's e2e walkthrough on it.
K8S_SMOKE_VERSION ?= v1.35.4
K8S_SMOKE_BIN := .cache/k8s/$(K8S_SMOKE_VERSION)/bin
K8S_SMOKE_MINOR := $(word 2,$(subst ., ,$(K8S_SMOKE_VERSION)))
K8S_SMOKE_LDFLAGS := -s -w $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X '$(p).gitVersion=$(K8S_SMOKE_VERSION)' -X '$(p).gitMajor=1' \
	-X '$(p).gitMinor=$(K8S_SMOKE_MINOR)' -X '$(p).gitTreeState=clean' \
	-X '$(p).buildDate=1970-01-01T00:00:00Z')

k8s-smoke: $(K8S_SMOKE_BIN)/kube-apiserver etcd

$(K8S_SMOKE_BIN)/kube-apiserver: hack/k8s-v1.35/go.mod hack/k8s-v1.35/go.sum
	mkdir -p $(K8S_SMOKE_BIN)
	cd hack/k8s-v1.35 && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -p $(K8S_GO_PARALLEL) \
		-tags=providerless -trimpath -ldflags "$(K8S_SMOKE_LDFLAGS)" \
		-o $(abspath $@) k8s.io/kubernetes/cmd/kube-apiserver

e2e-smoke: install
	PATH="$(abspath $(K8S_SMOKE_BIN)):$(K8S_PATH)" $(VENV)/bin/pytest -q -rs \
		tests/e2e/test_e2e_operator.py tests/e2e/test_e2e_preemption.py $(PYTEST_ARGS)
