# egress-gateway-operator. `make demo` runs the operator's demo on a local control plane;
# `make test` runs every test. Both install what they need first (hack/install-deps.sh).

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
CTEST_FLAGS ?= --output-on-failure
IMAGE ?= egress-gateway-operator:dev
FUZZ_SECONDS ?= 60
# `make fuzz` also runs the operator's model test (test/unit/controller/operator_model_test.cc)
# over this many seeds of this many steps (about 3 s a seed of 1,500 steps here).
MODEL_SEEDS ?= 100
MODEL_STEPS ?= 1500

.PHONY: all deps testenv configure build test test-unit test-e2e test-asan generate verify-generate \
        lint format demo bench fuzz image test-image docker-build clean

all: build

deps:
	hack/install-deps.sh

# The control plane binaries (built once, cached outside the repo).
testenv: deps
	hack/testenv/ensure-binaries.sh >/dev/null

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: testenv build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS)

test-unit: build
	cd $(BUILD_DIR) && ctest -L unit $(CTEST_FLAGS)

test-e2e: testenv build
	cd $(BUILD_DIR) && ctest -L e2e $(CTEST_FLAGS)

# Every test again under AddressSanitizer + UndefinedBehaviorSanitizer (a second build in
# build-asan/; not part of `make test`, which must fit CI's time budget).
test-asan: testenv deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DEGRESS_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest $(CTEST_FLAGS)

# Codecs, validation, typed clientset/listers/informers and CRDs from pkg/apis/*/*/types.h.
generate:
	hack/gencode.sh
	hack/gencrd.sh

verify-generate:
	hack/verify-codegen.sh

lint: deps configure
	hack/lint.sh $(BUILD_DIR)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

# What it needs and how long a first run takes, before the (long) first build.
demo:
	@hack/demo.sh --intro
	@$(MAKE) --no-print-directory testenv build
	EGW_DEMO_INTRO=shown hack/demo.sh $(BUILD_DIR)

bench: testenv build
	hack/bench.sh $(BUILD_DIR)

# libFuzzer: the generated decoders, pkg/ipam, the watch decoder and the kubeconfig loader, each
# FUZZ_SECONDS from its committed corpus (clang-14, ASan + UBSan, its own build dir: build/fuzz).
fuzz: deps build
	hack/fuzz.sh $(FUZZ_SECONDS)
	EGRESS_MODEL_SEED=$${EGRESS_MODEL_SEED:-$$(date +%s)} EGRESS_MODEL_SEEDS=$(MODEL_SEEDS) \
	  EGRESS_MODEL_STEPS=$(MODEL_STEPS) $(BUILD_DIR)/test/unit/controller/controller_operator_model_test

# The image, built here with podman from the Dockerfile (hack/image/build.sh: local debootstrap
# bases, this machine's Debian archive, the operator compiled in the build stage with this
# machine's ccache mounted); prints the image's name and size.
image: deps
	hack/image/build.sh --tag $(IMAGE)

# The image test alone (ctest label `image`, also part of `make test`): the image from this
# build's programs, checked as uid 65532 inside its root file system (test/image/image_test.sh).
test-image: build
	cd $(BUILD_DIR) && ctest -L image $(CTEST_FLAGS)

# The same Dockerfile where a Docker engine (with BuildKit) and Docker Hub are at hand.
docker-build:
	docker build -t $(IMAGE) .

clean:
	rm -rf $(BUILD_DIR)

# --- The Helm chart and the plain manifests (deploy/helm/, deploy/manifests/) ---------------
# `make manifests` copies the generated CRDs into the chart and renders deploy/manifests/ from it
# (hack/manifests.sh); `make verify-manifests` fails if either is stale; `make helm-lint` runs
# `helm lint --strict` with the default values and with the plain manifests' values. Together
# about 2 s (chart-check, in `make test`).
.PHONY: manifests verify-manifests helm-lint chart-check
manifests: testenv
	hack/manifests.sh

verify-manifests: testenv
	hack/manifests.sh --verify

helm-lint: testenv
	hack/helm-lint.sh

chart-check: verify-manifests helm-lint
test: chart-check
# --- end of the Helm chart block -------------------------------------------------------------
# --- Monitoring: alert rules and Grafana dashboard (deploy/helm/egress-gateway-operator/files/) --
# `make check-rules`: `promtool check rules` on the alert rules, `promtool test rules` on
# test/prometheus/ (every alert firing and not firing) and a lint of the dashboard's JSON
# (hack/check-rules.sh; about 2 s). In `make test`; CTest runs it too (check_rules, label unit).
.PHONY: check-rules
check-rules: deps
	hack/check-rules.sh
test: check-rules
# --- end of the monitoring block ------------------------------------------------------------
