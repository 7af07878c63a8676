# Developer entry points. Everything installs into .venv; system packages
# (cmake, git, the distro HIP toolchain) come from scripts/system-deps.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ARCH   ?= gfx1100
# Targets the distro HIP toolchain (Debian 12: HIP 5.2, clang 15) can compile.
DEMO_ARCH ?= gfx90a,gfx1030

.PHONY: setup system-deps demo test test-unit plan-example lint-recipes clean

setup: $(BIN)/rocbuild

$(BIN)/rocbuild: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[test]'
	touch $@

system-deps:
	bash scripts/system-deps

# The main job: build the bundled hello-hip example into one wheel with code
# objects for DEMO_ARCH, verify it, and show what it holds.
demo: system-deps setup
	@wheel="$$($(BIN)/rocbuild hello-hip --arch $(DEMO_ARCH) --out wheelhouse)" && \
	  echo && echo "wheel: $$wheel" && \
	  $(BIN)/python -m zipfile -l "$$wheel" && echo && \
	  $(BIN)/rocbuild verify "$$wheel" --arch $(DEMO_ARCH)

# The whole suite: unit, integration (real git, cmake, make, pip, hipcc) and
# the network tests that download the Horovod 0.28.1 sdist from PyPI. Tests
# marked hipcc must run here: ROCBUILD_REQUIRE_HIPCC=1 turns their skip into a failure.
test: system-deps setup
	ROCBUILD_REQUIRE_HIPCC=1 $(BIN)/python -m pytest -q -rs

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
