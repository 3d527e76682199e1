# The commands people type. README names two of them: `runway ...` (after `make install`) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# LiteLLM's proxy pins dependencies the product cannot share (gunicorn<24): its own virtualenv,
# used only by the gateway-sync tests to run the real proxy (tests/support/litellm.py).
LITELLM_VENV  := .venv-litellm
LITELLM_STAMP := $(LITELLM_VENV)/.installed

.PHONY: install test lint format test-unit test-e2e bench clean manifests cluster

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(LITELLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_VENV)/bin/python -m pip install --quiet '.[litellm-proxy]'
	touch $@

install: $(STAMP) $(LITELLM_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Every tier, every time: lint, then unit, integration and e2e tests (the e2e tier needs the
# test cluster: `make cluster` builds it once into .cache/cluster; later runs reuse it).
test: lint cluster $(LITELLM_STAMP)
	$(BIN)/python -m pytest tests

# kube-apiserver and etcd from pinned Go modules, upstream CRDs from their Go modules.
cluster: $(STAMP)
	$(BIN)/python tests/cluster/build.py

test-e2e: cluster
	$(BIN)/python -m pytest tests/e2e

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

# Manifests generated from the core's data; a unit test fails when they drift.
manifests: $(STAMP)
	$(BIN)/runway crds --part runtime > kustomize/base/crds.yaml
	$(BIN)/runway crds --part gateway > kustomize/gateway/crds.yaml
	$(BIN)/runway provider-configs > kustomize/providers/provider-configs.yaml

bench: $(STAMP)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.webhook
	$(BIN)/python -m bench.render
	$(BIN)/python -m bench.gateway

clean:
	rm -rf $(VENV) $(LITELLM_VENV) .mypy_cache .ruff_cache .pytest_cache .cache
