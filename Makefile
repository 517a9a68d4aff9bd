# gpushare: convenience wrapper around CMake/ctest. `make run` is the demo, `make test` the suite.
BUILD    ?= build
SANITIZE ?=
JOBS     ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build quiet-build test run asan fuzz bench format check-format clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DGS_SANITIZE=$(SANITIZE) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS) --timeout 600

run: quiet-build
	@scripts/demo.sh $(BUILD)

# The build of make run: one line, and the build's own output only when it fails.
quiet-build: deps
	@echo "building gpushare in $(BUILD)/ (its output only if it fails) ..."
	@log=$$(mktemp /tmp/gpushare-build.XXXXXX); \
	if { cmake -S . -B $(BUILD) -DGS_SANITIZE=$(SANITIZE) $(CMAKE_FLAGS) && \
	     cmake --build $(BUILD) -j$(JOBS); } >$$log 2>&1; then rm -f $$log; \
	else cat $$log; rm -f $$log; echo "make run: the build failed (its output is above)" >&2; exit 1; fi

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
	rm -rf build build-asan build-fuzz
