"""The draft recipe of a PyTorch extension, shaped like the shipped ones (causal-conv1d, mamba-ssm).

It requires a ROCm torch and builds with pip's build isolation off (the wheel step always does: with it on,
pip would install PyPI's CUDA torch and the extension would link libc10_cuda.so). Every arch variable is set
from the one arch list: PYTORCH_ROCM_ARCH for torch, and the package's own, with its own separator, where it
writes --offload-arch itself (torch then ignores PYTORCH_ROCM_ARCH). Comments say where each setting was
found, and DRAFT lines what could not be decided."""

from __future__ import annotations

import re

from rocbuild.draft.torch_reading import TorchReading, Var


def torch_draft(header: list[str], name: str, requirement: str, sha256: str, torch: TorchReading,
                archs: list[str], requires: list[str]) -> list[str]:
    lines = [*header, *_found(torch), *[f"# DRAFT: {note}" for note in draft_notes(torch, archs, requires)]]
    version = requirement.partition("==")[2]
    lines += ["schema: 1", f"name: {name}", f'version: "{version}"', f"summary: {name} built for AMD GPUs (draft)", "",
              "source:", f"  sdist: {requirement}", f"  sha256: {sha256}", "", "requires:",
              '  rocm: ">=6.1"  # DRAFT: the oldest ROCm it builds with was not read',
              "  torch: rocm  # a CUDA or CPU torch stops the build before compiling (exit 3)",
              f"  tools: [{', '.join(['hipcc', 'cmake'] if torch.cmake else ['hipcc'])}]",
              f"  python: [{', '.join(torch.python)}]", ""]
    lines += _unsupported(name, version, torch) + _env(torch) + _steps(torch.variables)
    lines += ["", "verify:", *_kernels_check(torch), f"  - import: {import_name(name, torch.packages)}", ""]
    return lines


def import_name(name: str, packages: list[str]) -> str:
    """The package the sdist holds whose name is the project's (optimum-quanto: optimum.quanto), else its
    only one, else the project's name as a module."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    same = [p for p in packages if re.sub(r"[^a-z0-9]", "", p.lower()) == key]
    if same or len(packages) == 1:
        return (same or packages)[0]
    return re.sub(r"[^A-Za-z0-9_]", "_", name).lower()


def _kernels_check(torch: TorchReading) -> list[str]:
    """The CUDAExtension modules named in setup.py must each carry device code: a build that comes out
    CPU-only (no GPU seen, a force variable unset) then fails here, naming the module."""
    named = [e for e in torch.kernels if e.name]
    computed = ", ".join(e.where for e in torch.kernels if not e.name)
    if torch.jit and not torch.kernels and not torch.built_at:
        return [f"  # Kernels are compiled at run time ({torch.jit}): the wheel carries their sources, not device code."]
    lines = ["  # Every wheel is checked for device code for each requested arch (built in)."]
    if computed:
        lines.append(f"  # DRAFT: the modules built at {computed} have computed names: name them in a code-objects "
                     "check's files: once the first build shows them.")
    if not named:
        return [*lines, "  # Name the library that must carry it once the first build shows where it is."]
    wheres = ", ".join(sorted({e.where for e in named}))
    files = ", ".join(dict.fromkeys(f'"{e.name.replace(".", "/")}*.so"' for e in named if e.name))
    return [*lines, f"  # The CUDAExtension modules ({wheres}) must carry it, and load HIP's runtime.",
            "  - name: kernels-are-rocm", "    code-objects:", f"      files: [{files}]", "      links: [libamdhip64]"]


def _found(torch: TorchReading) -> list[str]:
    lines = [f"# A PyTorch extension ({torch.marker}): built against the target python's ROCm torch, with pip's",
             "# build isolation off (with it on, pip installs PyPI's CUDA torch and the module links libc10_cuda.so)."]
    if torch.rocm_aware:
        lines.append(f"# ROCm in its build files: {', '.join(torch.rocm_aware)}.")
    if torch.arch_flag:
        lines.append(f"# It writes --offload-arch itself ({torch.arch_flag}), so torch ignores PYTORCH_ROCM_ARCH: its own "
                     "arch variables are set from the same list.")
    lines += [f"# Found: {v.name} ({v.kind}) at {v.where}: {v.why}" for v in torch.variables if v.kind != "other"]
    others = [f"{v.name} ({v.where})" for v in torch.variables if v.kind == "other"]
    if others:
        lines.append(f"# Also read, left unset: {', '.join(others)}")
    return lines


def draft_notes(torch: TorchReading, archs: list[str], requires: list[str] | None = None) -> list[str]:
    """The reading's notes, plus what follows from them for this draft: kernels compiled at run time, a
    package arch flag without a variable, and allow-lists against the archs asked for."""
    notes = list(torch.notes)
    pins = [r for r in requires or [] if r.replace(" ", "").lower().startswith(("torch>", "torch=", "torch<", "torch~"))]
    if pins:
        notes.append(f"build-system.requires pins {', '.join(pins)}: pip would install that (CUDA) torch with build "
                     "isolation on; here the target python's ROCm torch is used, and should meet it")
    if torch.jit:
        aot = [v.name for v in torch.variables if v.kind == "force" and v.value and "OPS" in v.name]
        notes.insert(0, f"kernels are compiled at run time (cpp_extension.load at {torch.jit})" + (
            f" unless {', '.join(aot)} asks for them at install time: the draft sets it, so they are compiled here"
            if aot else f", and setup.py builds CUDAExtension modules too ({torch.built_at}): the wheel is checked for "
            "device code" if torch.built_at else ": nothing may be compiled at install time, and the wheel then holds "
            "no device code (each user's machine compiles the kernels on first use, with its own hipcc)"))
    if torch.arch_flag and not any(v.kind == "arch" and v.value for v in torch.variables):
        notes.append(f"it writes --offload-arch itself ({torch.arch_flag}) but no variable for it was found: torch "
                     "then ignores PYTORCH_ROCM_ARCH; find how it picks its targets")
    for targets, where in torch.allow_lists:
        rejected = [a for a in archs if a.split(":")[0] not in targets]
        notes.append(f"{where} accepts only {', '.join(targets)} (see unsupported: below)"
                     + (f"; it rejects the requested {', '.join(rejected)}" if rejected else
                        f"; the requested {', '.join(archs)} pass" if archs else ""))
    return notes


def _unsupported(name: str, version: str, torch: TorchReading) -> list[str]:
    """An allow-list becomes a refusal before any step: the build would stop there anyway. A CMake one is
    read from the source each time (`archs-not-in:`); setup.py's is copied, a `when:` over the archs."""
    if not torch.allow_lists:
        return []
    lines = ["unsupported:"]
    for variable in torch.cmake_lists:
        lines += [f"  - archs-not-in: {{file: CMakeLists.txt, set: {variable}}}",
                  f'    why: "{name} accepts no other arch ({variable} in its CMakeLists.txt)"']
    for targets, where in torch.allow_lists:
        if where.startswith("CMakeLists.txt:"):
            continue
        listed = ", ".join(f"'{t}'" for t in targets)
        lines += [f'  - when: "${{{{ archs | reject(\'in\', [{listed}]) | list | length > 0 }}}}"',
                  f'    why: "{name} {version} accepts only {", ".join(targets)} ({where})"']
    return [*lines, ""]


def _env(torch: TorchReading) -> list[str]:
    lines = ["env:"]
    if any(v.name == "ROCM_PATH" for v in torch.variables):
        lines += ["  # Read by setup.py. Not on distro layouts: ROCM_PATH=/usr makes hipcc lose clang's device libraries.",
                  "  ROCM_PATH:", '    value: "${{ rocm.path }}"', "    when: \"${{ rocm.layout == 'rocm' }}\""]
    lines += ["  # cpp_extension's ROCm home: never /usr (it would put -isystem /usr/include before libstdc++'s",
              "  # folders); a build-only torch brings a ROCm home of links for distro layouts.",
              '  ROCM_HOME: "${{ torch.rocm_home or rocm.path }}"',
              "  # cpp_extension's own arch variable: with it unset and no GPU, newer torch passes an empty --offload-arch=.",
              "  PYTORCH_ROCM_ARCH: \"${{ archs | join(';') }}\"", ""]
    return lines


def _steps(variables: list[Var]) -> list[str]:
    settings = [v for v in variables if v.value is not None and v.name != "PYTORCH_ROCM_ARCH"]
    if not any(v.name == "MAX_JOBS" for v in settings):  # cpp_extension's ninja reads it whether setup.py does or not
        settings.append(Var("MAX_JOBS", "", "jobs", "${{ jobs }}", "cpp_extension's parallel compile jobs"))
    lines = ["steps:", "  - wheel: {}", "    env:"]
    for v in settings:
        lines += [f"      # {v.why}" + (f" ({v.where})" if v.where else ""), f'      {v.name}: "{v.value}"']
    return lines
