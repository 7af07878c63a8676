"""Making a build-only ROCm torch inside a build root (torchkit/kit.py says what it is). Every external
command is one of `KitPlan.commands`, shown by `rocbuild root torch NAME --dry-run` before anything runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import rocbuild.torchkit.symbols as symbols
from rocbuild.errors import HostNotReady, StepFailed
from rocbuild.process.runner import StepRunner, query_process
from rocbuild.progress import Progress
from rocbuild.torchkit.cmake import write_cmake_package
from rocbuild.torchkit.kit import (
    ARCH_FLAGS,
    CPU_LIBRARIES,
    DEBIAN_INCLUDE,
    DEBIAN_LIBS,
    DEBIAN_TORCH,
    DEVICE_COUNT,
    HIP_CMAKE_MACROS,
    HIP_CONFIG,
    HIP_LIBRARIES,
    HIPIFY_IGNORES,
    HIPIFY_INCLUDES,
    IS_COMPILED,
    MARKER,
    NO_SMI_COUNT,
    SOURCE_LAYOUT,
    THC_HEADERS,
    UNREADABLE_HEADERS,
    KitInfo,
    kit_python,
    version_py,
)

# Run by the root's python3: Debian's torch's own hipify (as build_amd.py imports it, from torch/utils),
# over the source-shaped tree; arguments as one JSON word.
HIPIFY = ("import json, os, sys; a = json.loads(sys.argv[1]); sys.path.insert(0, a['utils']); "
          "from hipify import hipify_python as h; "
          "r = h.hipify(project_directory=a['tree'], output_directory=a['tree'], show_progress=False, "
          "includes=[os.path.join(a['tree'], i) for i in a['includes']], "
          "ignores=[os.path.join(a['tree'], i) for i in a['ignores']]); print('hipified', len(r), 'files')")
# The ROCm include folders of a distro layout that torch's headers and extensions reach (hipblas for
# ATen/hip/Exceptions.h, thrust for torch's complex.h, ...): linked into the kit's ROCm home.
ROCM_INCLUDES = ("hip", "hipblas", "hipblas-common", "hipblaslt", "hipsparse", "hipsolver", "hiprand", "rocrand",
                 "hipcub", "rocprim", "thrust", "rocthrust", "rccl", "rocblas", "rocsolver", "rocsparse", "hipfft",
                 "rocm-core", "roctracer", "hsa", "amd_comgr")


@dataclass(frozen=True)
class KitPlan:
    """Where the kit goes and every command that makes it, in order (label, argv)."""

    folder: Path
    torch: Path  # the kit's torch package, in the venv's site-packages
    info: KitInfo
    python: str  # the root's python3, whose packages the kit's venv sees
    hipcc: str
    llvm_ifs: str
    commands: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def build(self) -> Path:
        return self.folder / "build"


def plan_kit(folder: Path, info: KitInfo, python: str, python_version: str, hipcc: str, llvm_ifs: str) -> KitPlan:
    build = folder / "build"
    torch = folder / "lib" / f"python{python_version}" / "site-packages" / "torch"
    hipify_args = json.dumps({"utils": str(DEBIAN_TORCH / "utils"), "tree": str(build / "src"),
                              "includes": list(HIPIFY_INCLUDES), "ignores": list(HIPIFY_IGNORES)})
    commands: list[tuple[str, tuple[str, ...]]] = [
        ("venv", (python, "-m", "venv", "--system-site-packages", "--clear", str(folder))),
        ("hipify", (python, "-c", HIPIFY, hipify_args)),
    ]
    for name in ("cuda", "hip"):  # declarations whose qualified names hold either
        commands.append((f"declarations-{name}", (hipcc, *_ast_flags(torch), "-Xclang", f"-ast-dump-filter={name}",
                                                  str(build / "all-hip.hip"))))
    for lib in CPU_LIBRARIES:
        commands.append((f"read-{lib}", (llvm_ifs, "--input-format=ELF", "--strip-undefined",
                                         f"--output-ifs={build / f'{lib}.debian.ifs'}",
                                         str(DEBIAN_LIBS / f"lib{lib}.so.{_series(info.torch)}"))))
    for lib in (*CPU_LIBRARIES, *HIP_LIBRARIES):
        commands.append((f"stub-{lib}", (llvm_ifs, "--input-format=IFS", f"--output-elf={torch / 'lib' / f'lib{lib}.so'}",
                                         str(build / f"{lib}.ifs"))))
    return KitPlan(folder, torch, info, python, hipcc, llvm_ifs, tuple(commands))


def _series(torch: str) -> str:
    return ".".join(torch.split(".")[:2])


def _ast_flags(torch: Path) -> tuple[str, ...]:
    """The ROCm clang reading the hipified headers for the host, as cpp_extension compiles them."""
    include = torch / "include"
    return ("-x", "hip", "--cuda-host-only", "-std=c++20", "-fsyntax-only", "-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1",
            "-DHIPBLAS_V2", f"-I{include}", f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}",
            "-Xclang", "-ast-dump=json")


def make_kit(plan: KitPlan, runner: StepRunner, progress: Progress) -> Path:
    """Run the plan; returns the kit's python."""
    steps = dict(plan.commands)
    log = plan.build / "kit.log"
    plan.build.mkdir(parents=True, exist_ok=True)
    _run(runner, progress, "venv", steps["venv"], plan, log)
    torch = _copy_torch(plan.torch, plan.info.torch)
    _source_tree(plan.build / "src")
    _run(runner, progress, "hipify", steps["hipify"], plan, log)
    _install_headers(plan.build / "src", torch / "include")
    _write_probe(torch / "include", plan.build / "all-hip.hip")
    declared = symbols.declared_symbols([_dump(progress, label, steps[label]) for label in
                                         ("declarations-cuda", "declarations-hip")])
    _libraries(plan, runner, progress, torch, declared, log)
    _metadata(plan, torch)
    write_cmake_package(DEBIAN_LIBS / "cmake", torch, plan.info.hip)
    # Written last: a kit whose making was cut short has no marker, and is never taken for current.
    (torch / MARKER).write_text(json.dumps(marker(plan), indent=2) + "\n")
    progress.say(f"    build-only ROCm torch {plan.info.version}: {plan.folder}")
    return kit_python(plan.folder)


def marker(plan: KitPlan) -> dict[str, object]:
    """The kit's marker: what it was made from, and by which code (a digest of the modules that write it)."""
    code = hashlib.sha256()
    for module in ("kit.py", "make.py", "symbols.py", "cmake.py"):
        code.update((Path(__file__).parent / module).read_bytes())
    return {**plan.info.to_json(), "made_by": code.hexdigest()[:16]}


def is_current(plan: KitPlan) -> bool:
    """The kit in plan.folder was finished, from the same Debian packages, by the same rocbuild code: making it
    again would give the same files, and would break any build compiling against it meanwhile."""
    try:
        made = json.loads((plan.torch / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return made == marker(plan) and kit_python(plan.folder).exists()


def _run(runner: StepRunner, progress: Progress, label: str, argv: tuple[str, ...], plan: KitPlan, log: Path) -> None:
    started = progress.start(f"torch kit: {label}", " ".join(argv[:3]) + (" ..." if len(argv) > 3 else ""))
    result = runner.run(argv, cwd=str(plan.build), log=log)
    if result.exit_code != 0:
        raise StepFailed(f"torch kit: {label} exited with {result.exit_code}", hint=f"its output: {log}")
    progress.done(f"torch kit: {label}", started)


def _dump(progress: Progress, label: str, argv: tuple[str, ...]) -> str:
    """An AST dump is tens of MB of JSON read straight from the compiler (not into the log)."""
    started = progress.start(f"torch kit: {label}", " ".join(argv[:2]) + " ...")
    result = query_process(argv, timeout=1800)
    if isinstance(result, str) or result.exit_code != 0:
        why = result if isinstance(result, str) else result.stderr.strip()[-2000:]
        raise StepFailed(f"torch kit: {label}: the HIP compiler could not read torch's hipified headers", hint=why)
    progress.done(f"torch kit: {label}", started)
    return result.stdout


def _copy_torch(torch: Path, release: str) -> Path:
    """Debian's torch package into the venv, its header and library links replaced by the kit's own."""
    if not DEBIAN_TORCH.is_dir():
        raise HostNotReady(f"no Debian torch at {DEBIAN_TORCH}", hint="rocbuild root torch installs python3-torch")
    if torch.exists():
        shutil.rmtree(torch)
    shutil.copytree(DEBIAN_TORCH, torch, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in ("include", "lib"):
        if (torch / sub).is_symlink() or (torch / sub).is_file():
            (torch / sub).unlink()
        elif (torch / sub).is_dir():
            shutil.rmtree(torch / sub)
        (torch / sub).mkdir()
    # torch/__init__.py loads torch/lib/libtorch_global_deps.so at import (a ROCm wheel ships it there),
    # else the one beside the first torch dist-info it finds: Debian's, until the kit is installed as a
    # wheel (root torch --wheel), whose own dist-info comes first. It is only loaded, never linked.
    deps = "libtorch_global_deps.so"
    os.symlink(DEBIAN_LIBS / f"{deps}.{_series(release)}", torch / "lib" / deps)
    return torch


def _source_tree(src: Path) -> None:
    """Debian's installed headers laid out as PyTorch's source tree, which hipify tells files apart by."""
    if src.exists():
        shutil.rmtree(src)
    for installed, in_source in SOURCE_LAYOUT:
        (src / in_source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(DEBIAN_INCLUDE / installed, src / in_source, symlinks=True)
    (src / "aten" / "src" / "THC").mkdir(parents=True)
    for name, text in THC_HEADERS.items():
        (src / "aten" / "src" / "THC" / name).write_text(text)


def _install_headers(src: Path, include: Path) -> None:
    """The hipified tree into torch/include as a ROCm wheel lays it out (THC as THH, fmt beside it), with the configured
    headers a ROCm build writes (ATen's CUDAConfig.h and HIPConfig.h, c10's hip_cmake_macros.h)."""
    for installed, in_source in SOURCE_LAYOUT:
        shutil.copytree(src / in_source, include / installed, symlinks=True, dirs_exist_ok=True)
    shutil.copytree(src / "aten" / "src" / "THH", include / "THH", dirs_exist_ok=True)
    hipified = {installed for installed, _ in SOURCE_LAYOUT}
    for name in os.listdir(DEBIAN_INCLUDE / "torch"):
        if f"torch/{name}" not in hipified:
            _copy_any(DEBIAN_INCLUDE / "torch" / name, include / "torch" / name)
    _copy_any(DEBIAN_INCLUDE / "caffe2", include / "caffe2")
    _copy_any(DEBIAN_INCLUDE / "fmt", include / "fmt")  # where a wheel has the fmt torch's headers include
    (include / "ATen" / "hip" / "HIPConfig.h").write_text(HIP_CONFIG)
    (include / "ATen" / "cuda" / "CUDAConfig.h").write_text(HIP_CONFIG)
    (include / "c10" / "hip" / "impl").mkdir(parents=True, exist_ok=True)
    (include / "c10" / "hip" / "impl" / "hip_cmake_macros.h").write_text(HIP_CMAKE_MACROS)


def _copy_any(source: Path, dest: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    elif source.exists():
        shutil.copy2(source, dest)


def _write_probe(include: Path, probe: Path) -> None:
    """One file including every header of c10/hip and ATen/hip (and impl/), for the symbol read."""
    headers = [p.relative_to(include).as_posix() for folder in ("c10/hip", "c10/hip/impl", "ATen/hip", "ATen/hip/impl")
               for p in sorted((include / folder).glob("*.h"))]
    probe.write_text("".join(f"#include <{h}>\n" for h in headers if h not in UNREADABLE_HEADERS))


def _libraries(plan: KitPlan, runner: StepRunner, progress: Progress, torch: Path, declared: dict[str, set[str]],
               log: Path) -> None:
    """Link-only libraries with a ROCm wheel's sonames: Debian's symbols for the CPU ones, the headers'
    declarations for the HIP ones."""
    steps = dict(plan.commands)
    series = _series(plan.info.torch)
    renames = {f"lib{lib}.so.{series}": f"lib{lib}.so" for lib in CPU_LIBRARIES}
    defined: set[str] = set()
    for lib in CPU_LIBRARIES:
        _run(runner, progress, f"read-{lib}", steps[f"read-{lib}"], plan, log)
        text = (plan.build / f"{lib}.debian.ifs").read_text()
        defined |= set(symbols.ifs_names(text))
        (plan.build / f"{lib}.ifs").write_text(symbols.renamed_ifs(text, renames))
    runtime = f"libamdhip64.so.{plan.info.rocm.split('.')[0]}"
    needed = {"c10_hip": ["libc10.so", runtime], "torch_hip": ["libc10_hip.so", "libtorch_cpu.so", "libc10.so", runtime]}
    for lib, exported in symbols.by_library(declared, HIP_LIBRARIES, defined).items():
        if not exported:
            raise StepFailed(f"torch kit: no declarations found for lib{lib}.so in torch's hipified headers",
                             hint=f"the compiler's AST dumps are read from {plan.build}")
        (plan.build / f"{lib}.ifs").write_text(symbols.ifs_text(f"lib{lib}.so", exported, needed[lib]))
    for lib in (*CPU_LIBRARIES, *HIP_LIBRARIES):
        _run(runner, progress, f"stub-{lib}", steps[f"stub-{lib}"], plan, log)


def _metadata(plan: KitPlan, torch: Path) -> None:
    """version.py for ROCm, and `torch.cuda._is_compiled()` true (cpp_extension's ROCm gate since 2.14)."""
    home = plan.folder / "rocm"
    (torch / "version.py").write_text(version_py(plan.info, home))
    cuda = torch / "cuda" / "__init__.py"
    text = cuda.read_text()
    for needed in (IS_COMPILED, DEVICE_COUNT, NO_SMI_COUNT, ARCH_FLAGS):
        if needed not in text:
            raise StepFailed(f"torch kit: {cuda} no longer holds `{needed}`",
                             hint="this torch release tells a GPU build apart, or counts GPUs, otherwise: teach "
                                  "torchkit/kit.py its way")
    text = text.replace(IS_COMPILED, "return True  # rocbuild: a build-only ROCm torch compiles for ROCm", 1)
    text = text.replace(DEVICE_COUNT, "return False  # rocbuild: a build-only ROCm torch runs no GPU", 1)
    text = text.replace(ARCH_FLAGS, "arch_flags = None  # rocbuild: a build-only ROCm torch compiled no kernels", 1)
    cuda.write_text(text.replace(NO_SMI_COUNT, "r = 0  # rocbuild: a build-only ROCm torch sees no GPU", 1))
    _rocm_home(home)
    shutil.rmtree(plan.build / "src", ignore_errors=True)  # hipified and installed: 50 MB of no further use


def _rocm_home(home: Path) -> None:
    """A ROCm home of links for cpp_extension's ROCM_HOME on a distro layout: `ROCM_HOME=/usr` would put
    `-isystem /usr/include` before libstdc++'s own folders and break its #include_next."""
    if home.exists():
        shutil.rmtree(home)
    (home / "include").mkdir(parents=True)
    (home / "bin").mkdir()
    for name in ROCM_INCLUDES:
        if (DEBIAN_INCLUDE / name).exists():
            (home / "include" / name).symlink_to(DEBIAN_INCLUDE / name)
    for tool in ("hipcc", "hipconfig"):
        if shutil.which(tool):
            (home / "bin" / tool).symlink_to(shutil.which(tool) or tool)
    (home / "lib").symlink_to(DEBIAN_LIBS)


def plan_here(environ: dict[str, str]) -> KitPlan:
    """The kit for the root this process runs in: Debian's torch, the root's ROCm and HIP compiler."""
    import re

    from rocbuild.detect.rocm import find_rocm, probe_tool
    from rocbuild.roots.store import installed_packages
    from rocbuild.torchkit.kit import KIT_PACKAGES, kit_folder

    version = re.search(r"__version__\s*=\s*'([0-9.]+)", _read(DEBIAN_TORCH / "version.py"))
    rocm = find_rocm(None, environ)
    if version is None or rocm is None or rocm.version is None or rocm.hip_compiler is None or rocm.hipcc is None:
        raise HostNotReady("rocbuild root torch: this root lacks Debian's torch or a ROCm with its HIP compiler",
                           hint="rocbuild root torch NAME installs " + " ".join(KIT_PACKAGES))
    hip = (probe_tool([str(rocm.path / "bin" / "hipconfig"), "--version"], environ) or str(rocm.version)).strip()
    packages = installed_packages(Path("/"))
    info = KitInfo(torch=version.group(1), rocm=str(rocm.version), hip=hip.split("-")[0],
                   made_from={p: packages[p] for p in ("python3-torch", "libtorch-dev", "hipcc") if p in packages})
    llvm_ifs = rocm.hip_compiler.parent / "llvm-ifs"
    python = query_process(["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    if isinstance(python, str) or python.exit_code != 0:
        raise HostNotReady("rocbuild root torch: the root's python3 does not run", hint=str(python))
    return plan_kit(kit_folder(info.torch, info.rocm), info, "/usr/bin/python3", python.stdout.strip(), str(rocm.hipcc),
                    str(llvm_ifs))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
