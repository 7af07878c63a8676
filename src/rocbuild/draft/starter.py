"""The commented starter recipe `rocbuild recipes new NAME` writes."""

from __future__ import annotations

from rocbuild.recipe.schema import MODELINE, MODELINE_HINT

STARTER = """\
{modeline}
# {name}: a rocbuild recipe. Check it with `rocbuild recipes lint {name}.yaml`,
# see every command it would run with `rocbuild plan {name}.yaml --arch gfx90a`,
# build it with `rocbuild {name}.yaml --arch gfx90a`.
{hint}
# Values may use templates: ${{{{ archs | join(';') }}}}, ${{{{ rocm.path }}}},
# ${{{{ rocm.version >= '6.1' }}}}, ${{{{ python }}}}, ${{{{ jobs }}}}, ${{{{ options.NAME }}}}.
schema: 1
name: {name}
version: "0.1.0"                     # PEP 440: the version this recipe builds
summary: What {name} is, in one line

source:
  git: https://github.com/OWNER/{name}.git   # or `path: ../some/folder` (copied, never modified)
  ref: main                          # a branch, tag or commit; pin a tag for repeatable builds
  # commit: 0123abc                  # optional: fail when the ref resolves to another commit
  submodules: false

requires:
  rocm: ">=6.0"                      # a PEP 440 specifier, checked before anything runs
  tools: [cmake]                     # must be on PATH
  python: [setuptools, wheel]        # build modules the target python must have

# Extra environment for every step (a value may be {{value: ..., when: ...}}).
env:
  PYTORCH_ROCM_ARCH: "${{{{ archs | join(';') }}}}"

# Changes to the upstream tree, applied to a fresh checkout in order:
# diff (a file under patches/), replace (text or regex, with count), link, copy.
patches: []
#  - replace:
#      file: setup.py
#      find: "cuda"
#      with: "hip"
#      count: 1

# Build steps: cmake, cmake-build, make, run (an argv list), shell, wheel.
steps:
  - name: wheel
    wheel: {{}}                        # pip wheel --no-deps --no-build-isolation, into the work folder

# Every wheel is checked before it reaches the wheelhouse: device code for each
# requested arch, nothing linked against CUDA (built in). Add your own:
verify:
  - name: import
    import: {module}                   # runs only where a GPU is usable
"""


def starter_recipe(name: str) -> str:
    """The first line points editors (yaml-language-server: VS Code, Neovim, Helix...) at the schema, in a
    file beside the recipe that `rocbuild recipes schema -o` writes (a path that holds wherever it is shared)."""
    module = name.replace("-", "_").replace(".", "_")
    return STARTER.format(name=name, module=module, modeline=MODELINE, hint=MODELINE_HINT)
