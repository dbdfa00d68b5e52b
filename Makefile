# capbench: `make run` sets everything up and runs the default benchmark;
# `make test` sets everything up and runs every test. Both install what is
# missing on a fresh Debian/Ubuntu machine (apt-get needs root).

SHELL  := /bin/bash
PYTHON ?= python3
VENV   := .venv
BUILD  := build
# Extra arguments for `make run`, e.g. make run ARGS="--sizes 64,1518"
ARGS   ?=

# Debian packages the build, the tests and the benchmarks need (chromium: the
# end-to-end test of the HTML report opens it headless).
APT_PACKAGES := clang llvm libbpf-dev libxdp-dev libpcap-dev libcmocka-dev zlib1g-dev \
                libelf-dev meson ninja-build pkg-config bpftool iproute2 \
                python3-venv tcpdump tshark netsniff-ng ethtool tcpreplay chromium

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps venv build run test test-c test-py bench clean distclean help

all: build

help:
	@echo "make run    install what is missing, build, run the default benchmark"
	@echo "make test   install what is missing, build, run every test"
	@echo "make bench  receive models, generator, capture-backend and traffic benchmarks against"
	@echo "            trafgen, tcpdump, netsniff-ng and tcpreplay (about 14 minutes)"
	@echo "make clean  remove the build; make distclean also removes .venv"

# Install only the packages that are missing, so a set-up machine is quick.
deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "capbench: installing missing packages:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

venv: deps $(VENV)/.installed

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: venv build
	$(VENV)/bin/capbench run $(ARGS)

test-c: build
	meson test -C $(BUILD) --print-errorlogs

test-py: venv build
	$(VENV)/bin/pytest -q tests/py tests/e2e

test: venv build test-c test-py

bench: venv build
	$(VENV)/bin/python bench/bench_rx_mode.py
	$(VENV)/bin/python bench/bench_generator_capture.py
	$(VENV)/bin/python bench/bench_backends.py
	$(VENV)/bin/python bench/bench_traffic.py

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(VENV)
