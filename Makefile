# graphcore: one entry point for building, running and testing.
#
#   make example   build everything (release) and run the main example (without
#                  a GPU: builds, says so and succeeds)
#   make test      the whole test suite (what CI runs); first installs what
#                  it needs under target/tools (make test-deps, scripts/test-deps)
#   make install   install the library, headers, pkg-config and CMake files:
#                  make install PREFIX=/usr/local [DESTDIR=/staging]
#                  (INSTALL_FROM=DIR installs DIR's libgraphcore.so/.a
#                  instead of building; LIBDIR, INCLUDEDIR: scripts/install)
#   make uninstall remove exactly what make install installed (same PREFIX,
#                  DESTDIR)
#   make header    regenerate include/graphcore.h from ffi/
#   make readme-results  rewrite the generated figures of README.md, docs/results.md and
#                  docs/reliability.md from perf/results/, the built library and
#                  tests/counts.json (perf/report/readme_results.py)
#   make results-check  the measurement wing's check (CI runs it; `make test`
#                  does not): the generated figures are current, and the C
#                  benches build and stop cleanly without a GPU
#   make ptx       regenerate kernels/ptx/*.ptx from kernels/*.cu (NVRTC 12.0)
#   make gpu-check stage everything for the GPU machine (scripts/gpu-check)
#   make fuzz      fuzz every target for FUZZ_SECS (default 60) each (fuzz/run)
#   make abi-check compare libgraphcore.so's ABI with abi/libgraphcore.abi
#   make abi-baseline  rewrite abi/libgraphcore.abi from the current build

CARGO    ?= cargo
CC       ?= cc
CXX      ?= c++
NVCC     ?= nvcc
PYTHON   ?= python3
RELEASE  := target/release
EXBUILD  := c_examples/build
CFLAGS_EX := -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Iinclude
CXXFLAGS_EX := -std=c++17 -O2 -Wall -Wextra -Werror -pedantic -Iinclude
LDFLAGS_EX := -L$(RELEASE) -Wl,-rpath,$(abspath $(RELEASE)) -lgraphcore -lm
EXAMPLES := $(patsubst c_examples/%.c,$(EXBUILD)/%,$(wildcard c_examples/*.c)) \
            $(patsubst c_examples/%.cpp,$(EXBUILD)/%_cpp,$(wildcard c_examples/*.cpp))
CU_EXAMPLES := $(patsubst c_examples/%.cu,$(EXBUILD)/%_cu,$(wildcard c_examples/*.cu))
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)
MAIN_EXAMPLE ?= forward_backward
PREFIX   ?= /usr/local
DESTDIR  ?=
LIBDIR   ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
INSTALL_FROM ?=
INSTALL_ENV = PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' LIBDIR='$(LIBDIR)' \
              INCLUDEDIR='$(INCLUDEDIR)' FROM='$(or $(INSTALL_FROM),$(RELEASE))'

.PHONY: all lib examples example test test-deps lint header readme-results results-check ptx check-ptx gpu-check fuzz abi-check abi-baseline clean install uninstall

all: lib examples

lib:
	$(CARGO) build --release -p graphcore-ffi
	ln -sf libgraphcore.so $(RELEASE)/libgraphcore.so.0

$(EXBUILD)/%: c_examples/%.c include/graphcore.h lib
	@mkdir -p $(EXBUILD)
	$(CC) $(CFLAGS_EX) $< -o $@ $(LDFLAGS_EX)

$(EXBUILD)/%_cpp: c_examples/%.cpp include/graphcore.h include/graphcore.hpp lib
	@mkdir -p $(EXBUILD)
	$(CXX) $(CXXFLAGS_EX) $< -o $@ $(LDFLAGS_EX)

$(EXBUILD)/%_cu: c_examples/%.cu include/graphcore.h lib
	@mkdir -p $(EXBUILD)
	$(NVCC) -O2 -Iinclude $< -o $@ -L$(RELEASE) -Xlinker -rpath -Xlinker $(abspath $(RELEASE)) -lgraphcore -lcublas

ifneq ($(HAVE_NVCC),)
examples: $(EXAMPLES) $(CU_EXAMPLES)
else
examples: $(EXAMPLES)
	@echo "skipping $(CU_EXAMPLES): nvcc not found"
endif

# Without an NVIDIA GPU or driver the example stops with graphcore's message
# and exit status 2 (c_examples/common.h, open_gpu): everything is built,
# so make example says so and succeeds.
example: examples
	@echo ./$(EXBUILD)/$(MAIN_EXAMPLE)
	@./$(EXBUILD)/$(MAIN_EXAMPLE); rc=$$?; \
	if [ $$rc -eq 2 ]; then \
	  echo "make example: no NVIDIA GPU or driver here: the library and the examples are built ($(RELEASE), $(EXBUILD)); run it on a machine with a GPU"; \
	  exit 0; \
	fi; exit $$rc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --document-private-items
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	$(CARGO) clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

# scripts/test-deps installs NVRTC, pytest, cmake and pkg-config into this
# venv when they are missing (and says so); the recipes below find them
# first on PATH.
TOOLS_BIN := $(CURDIR)/target/tools/venv/bin
check-ptx ptx test: export PATH := $(TOOLS_BIN):$(PATH)

test-deps:
	scripts/test-deps

check-ptx: test-deps
	$(PYTHON) kernels/gen_ptx.py --check

# cargo-nextest when installed, else cargo test; the last line is the
# runner's summary.
test: check-ptx
	$(CARGO) build -p graphcore-ffi
	@if command -v cargo-nextest >/dev/null; then \
	  echo "$(CARGO) nextest run --workspace --no-fail-fast"; \
	  $(CARGO) nextest run --workspace --no-fail-fast; \
	else \
	  echo "cargo-nextest not found: running cargo test instead (cargo install cargo-nextest --locked adds it)"; \
	  echo "$(CARGO) test --workspace --no-fail-fast"; \
	  $(CARGO) test --workspace --no-fail-fast; \
	fi

header:
	GC_BLESS=1 $(CARGO) test --test suite header_is_current

readme-results:
	$(CARGO) build -p graphcore-ffi
	$(PYTHON) perf/report/readme_results.py

# The product's tests never read benchmark output; this does.
results-check:
	$(CARGO) build -p graphcore-ffi
	$(PYTHON) perf/report/readme_results.py --check
	perf/check-c-benches target/debug

ptx: test-deps
	$(PYTHON) kernels/gen_ptx.py

gpu-check:
	scripts/gpu-check

# Builds the release library first unless INSTALL_FROM names a folder that
# already holds libgraphcore.so and libgraphcore.a.
install: $(if $(INSTALL_FROM),,lib)
	$(INSTALL_ENV) scripts/install install

uninstall:
	$(INSTALL_ENV) scripts/install uninstall

fuzz:
	fuzz/run

# The ABI baseline comes from the debug build: abidw needs its full debug
# information (types); the release profile keeps none. See abi/check.sh.
abi-check:
	abi/check.sh

abi-baseline:
	$(CARGO) build -p graphcore-ffi
	abidw --no-corpus-path --no-comp-dir-path --no-show-locs \
	  --out-file abi/libgraphcore.abi target/debug/libgraphcore.so

clean:
	$(CARGO) clean
	rm -rf $(EXBUILD) stage
