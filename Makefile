# gpushare: convenience wrapper around CMake/ctest. `make run` is the demo, `make test` the suite.
BUILD    ?= build
SANITIZE ?=
JOBS     ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test run asan fuzz bench format check-format clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DGS_SANITIZE=$(SANITIZE) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j$(JOBS) --timeout 600

run: build
	@scripts/demo.sh $(BUILD)

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
