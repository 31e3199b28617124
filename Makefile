# The two commands a newcomer needs: `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps configure build build-all demo test clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Compiler progress is filtered out; warnings and errors still show, and a failed build fails.
QUIET = grep -vE '^\[ *[0-9]+%\]|^Consolidate|^Scanning|Entering directory|Leaving directory' || true

build: configure
	@bash -o pipefail -c "cmake --build $(BUILD) -j $(JOBS) --target rig 2>&1 | { $(QUIET); }"
	@test -x $(BUILD)/rig

build-all: configure
	@bash -o pipefail -c "cmake --build $(BUILD) -j $(JOBS) 2>&1 | { $(QUIET); }"

demo: build
	@$(BUILD)/rig run scenarios/quickstart.toml

test: build-all
	@cd $(BUILD) && ctest --output-on-failure -j 2

clean:
	rm -rf $(BUILD)
