# capbench: `make run` sets everything up and runs the default benchmark;
# `make test` sets everything up and runs every test. Both install what is
# missing on a fresh Debian/Ubuntu machine (apt-get needs root).

SHELL  := /bin/bash
PYTHON ?= python3
VENV   := .venv
BUILD  := build
# The sanitizer build: clang, ASan + UBSan (no recovery: any undefined
# behaviour fails), the libFuzzer harnesses of tests/fuzz.
BUILD_SAN := build-san
# Seconds each fuzz harness runs in `make test`, and in `make fuzz`.
FUZZ_TEST_SECONDS ?= 5
FUZZ_SECONDS ?= 120
# Extra arguments for `make run`, e.g. make run ARGS="--sizes 64,1518"
ARGS   ?=

# Debian packages a build of the C programs needs, `pip install .`'s too (`make build-deps`
# installs only these; clang is also the C compiler `cc` when gcc is absent; pip brings meson
# and meson-python, `make build` uses Debian's meson).
BUILD_PACKAGES := clang libbpf-dev libxdp-dev libpcap-dev zlib1g-dev libelf-dev meson ninja-build \
                  pkg-config bpftool python3-venv
# And those the tests and the benchmarks need (chromium: the end-to-end test of the HTML
# report opens it headless; libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes, for
# the sanitizer build; openssh-server and openssh-client: the SSH tests run an sshd per network
# namespace as remote hosts; argus-server and argus-client: the argus capture-program adapter
# and its racount; linux-perf: `--profile` samples every CPU with perf record; help2man: the
# programs' man pages from their --help; zsh: the test that it reads the completions;
# libdpdk-dev: headers and pkg-config's libdpdk, so that capbench-cap's dpdk backend is built
# (meson's `dpdk` feature, auto), dpdk: its drivers (net_af_xdp, net_af_packet, loaded by EAL
# as plugins), dpdk-dev: dpdk-testpmd and dpdk-devbind.py).
APT_PACKAGES := $(BUILD_PACKAGES) libclang-rt-14-dev llvm libcmocka-dev iproute2 \
                tcpdump tshark netsniff-ng ethtool tcpreplay chromium \
                openssh-server openssh-client argus-server argus-client linux-perf help2man zsh \
                libdpdk-dev dpdk dpdk-dev

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build-deps venv build build-san run test test-c test-san fuzz-smoke test-py fuzz bench \
        clean distclean help

all: build

help:
	@echo "make run    install what is missing, build, run the default benchmark"
	@echo "make test   install what is missing, build, run every test (C tests also under"
	@echo "            ASan+UBSan, each fuzz harness $(FUZZ_TEST_SECONDS) s)"
	@echo "make fuzz   run each fuzz harness FUZZ_SECONDS=$(FUZZ_SECONDS) s, then the hypothesis"
	@echo "            harnesses with their fuzz profile"
	@echo "make bench  receive models, generators, capture-backend, capture-program, traffic and"
	@echo "            profiling benchmarks against trafgen, testpmd, tcpdump, dumpcap, tshark, netsniff-ng"
	@echo "            and tcpreplay (about 24 minutes: bench/README.md)"
	@echo "make clean  remove the builds (build, build-san); make distclean also removes .venv"
	@echo "make build-deps  only the Debian packages \`pip install .\` needs to build capbench"

# Install only the packages that are missing, so a set-up machine is quick.
deps: PACKAGES := $(APT_PACKAGES)
build-deps: PACKAGES := $(BUILD_PACKAGES)
deps build-deps:
	@missing=$$(for p in $(PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "capbench: installing missing packages:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The development venv: pyproject.toml's dependencies (and its test extra and build
# requirements), this checkout's python/ on its path and the `capbench` command, the C programs
# those of ./build. Not `pip install -e .`: meson-python's editable install would rebuild on
# every import and win over PYTHONPATH (tools/dev_venv.py says more). `pip install .` builds a
# wheel with the programs in it (docs/manual.md, "Installing").
$(VENV)/.installed: pyproject.toml tools/dev_venv.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python tools/dev_venv.py test manuals
	touch $@

venv: deps $(VENV)/.installed

# The venv's Python makes capbench's man page and the shell completions (docs/meson.build).
MANUALS_PYTHON := $(CURDIR)/$(VENV)/bin/python

$(BUILD)/build.ninja:
	meson setup $(BUILD) -Dmanuals_python=$(MANUALS_PYTHON)

build: deps venv $(BUILD)/build.ninja
	@meson configure $(BUILD) -Dmanuals_python=$(MANUALS_PYTHON) 2>/dev/null || \
	  meson setup --reconfigure $(BUILD) -Dmanuals_python=$(MANUALS_PYTHON) >/dev/null
	ninja -C $(BUILD)

run: venv build
	$(VENV)/bin/capbench run $(ARGS)

test-c: build
	meson test -C $(BUILD) --print-errorlogs

# Without DPDK: its libraries are not built with the sanitizers, and EAL's memory is its own
# (the dpdk backend's option and EAL-argument code, which has no DPDK in it, is still tested).
$(BUILD_SAN)/build.ninja:
	CC=clang meson setup $(BUILD_SAN) -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dbuildtype=debugoptimized -Dc_args=-fno-sanitize-recover=all -Ddpdk=disabled

build-san: deps $(BUILD_SAN)/build.ninja
	ninja -C $(BUILD_SAN)

# The cmocka tests under ASan + UBSan, and each fuzz harness on its seed
# corpus and regression inputs once (tests/fuzz).
test-san: build-san
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 meson test -C $(BUILD_SAN) --print-errorlogs

# Each fuzz harness for a few seconds: a crash, sanitizer report or hang fails.
fuzz-smoke: build-san
	tests/fuzz/run $(BUILD_SAN) $(FUZZ_TEST_SECONDS)

# tests/py runs the programs only as fakes and sends nothing: on every CPU at once. tests/e2e
# sends on real test beds and reads CPU time: one test at a time.
test-py: venv build
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -n auto tests/py
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -rs --durations=15 tests/e2e

test: venv build test-c test-san fuzz-smoke test-py

# Longer: every C harness FUZZ_SECONDS, then the Python (hypothesis) harnesses.
fuzz: venv build-san
	tests/fuzz/run $(BUILD_SAN) $(FUZZ_SECONDS)
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -q tests/py -k fuzz

bench: venv build
	$(VENV)/bin/python bench/bench_rx_mode.py
	$(VENV)/bin/python bench/bench_generator_capture.py
	$(VENV)/bin/python bench/bench_backends.py
	$(VENV)/bin/python bench/bench_apps.py
	$(VENV)/bin/python bench/bench_traffic.py
	$(VENV)/bin/python bench/bench_profile.py
	$(VENV)/bin/python bench/bench_generator.py

clean:
	rm -rf $(BUILD) $(BUILD_SAN)

distclean: clean
	rm -rf $(VENV)
