# SPDX-License-Identifier: Apache-2.0
# gpushare: convenience wrapper around CMake/ctest. `make run` is the demo, `make test` the suite.
BUILD    ?= build
SANITIZE ?=
JOBS     ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX   ?= /usr/local
DESTDIR  ?=

.PHONY: all deps build quiet-build test run asan fuzz bench format check-format clean install \
        package test-k8s images

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DGS_SANITIZE=$(SANITIZE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The suite without the real Kubernetes (label k8s-real: make test-k8s).
test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS) --timeout 600 -LE k8s-real

# The tests against a real Kubernetes (issue 35): builds its components from their Go modules
# into the cache (scripts/k8s/build.sh; reused when there; K8S_VERSION=1.36 for the older
# release; and helm, for k8s_real_helm), then ctest -L k8s-real: the smoke test and k8s_real_helm
# (each a cluster of its own), then the acceptance tests on one shared cluster (the ctest fixture
# k8s_real: tests/k8s/real/up.sh, down.sh).
test-k8s: build
	@GS_K8S_HELM=1 scripts/k8s/build.sh
	GS_REQUIRE_K8S=1 ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -L k8s-real --timeout 1800

run: quiet-build
	@scripts/demo.sh $(BUILD)

# The build of make run: one line, and the build's own output only when it fails.
quiet-build: deps
	@echo "building gpushare in $(BUILD)/ (its output only if it fails) ..."
	@log=$$(mktemp /tmp/gpushare-build.XXXXXX); \
	if { cmake -S . -B $(BUILD) -DGS_SANITIZE=$(SANITIZE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	       $(CMAKE_FLAGS) && cmake --build $(BUILD) -j$(JOBS); } >$$log 2>&1; then rm -f $$log; \
	else cat $$log; rm -f $$log; echo "make run: the build failed (its output is above)" >&2; exit 1; fi

# Installs under $(DESTDIR)$(PREFIX); the paths compiled into the programs follow PREFIX.
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

# Debian packages gpushare_VERSION_ARCH.deb and gpushare-sim_VERSION_ARCH.deb in build-pkg/,
# built for /usr without the tests.
package: deps
	@cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DGS_TESTS=OFF \
		$(CMAKE_FLAGS) >/dev/null
	@cmake --build build-pkg -j$(JOBS)
	@cd build-pkg && cpack -G DEB >/dev/null
	@ls build-pkg/*.deb

# Container images (podman): the node image and the extender's, built from deploy/images/ with
# the programs of build-pkg/; archives in build-pkg/images/ (scripts/images.sh: BASE, TAG).
images: deps
	@JOBS=$(JOBS) scripts/images.sh

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, in build-asan/.
asan:
	$(MAKE) test BUILD=build-asan SANITIZE=address,undefined

# libFuzzer binaries (clang) in build-fuzz/; run one with build-fuzz/tests/NAME-libfuzzer.
fuzz: deps
	@scripts/fuzz.sh build-fuzz

bench: build
	@scripts/bench.sh $(BUILD)

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

check-format:
	@scripts/check-format.sh

clean:
	rm -rf build build-asan build-fuzz build-pkg
