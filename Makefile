# Developer entry points. Everything installs into .venv; system packages
# (cmake, git, the distro HIP toolchain) come from scripts/system-deps.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ARCH   ?= gfx1100

.PHONY: setup system-deps test test-unit plan-example lint-recipes clean

setup: $(BIN)/rocbuild

$(BIN)/rocbuild: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[test]'
	touch $@

system-deps:
	bash scripts/system-deps

# The whole suite: unit, integration (real git, cmake, make, pip) and the
# network tests that download the Horovod 0.28.1 sdist from PyPI.
test: system-deps setup
	$(BIN)/python -m pytest -q -rs

test-unit: setup
	$(BIN)/python -m pytest -q tests/unit

# What rocbuild would run for the shipped recipes on this machine's ROCm.
plan-example: system-deps setup
	$(BIN)/rocbuild plan bitsandbytes --arch $(ARCH)
	$(BIN)/rocbuild plan horovod --arch $(ARCH)

lint-recipes: setup
	$(BIN)/rocbuild recipes lint recipes/*.yaml

clean:
	rm -rf $(VENV) .pytest_cache build dist wheelhouse
