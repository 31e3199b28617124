# The two commands a newcomer needs: `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps configure build demo test clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@bash -o pipefail -c "cmake --build $(BUILD) -j $(JOBS) 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^Consolidate|^Scanning' || true; }"
	@test -x $(BUILD)/rig

demo: build
	@$(BUILD)/rig run scenarios/quickstart.toml

test: build
	@cd $(BUILD) && ctest --output-on-failure -j 2

clean:
	rm -rf $(BUILD)
