"""`rocbuild doctor` and `rocbuild detect`: what this machine offers a build, and what is wrong with it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rocbuild.cli.common import ROOT_HELP, Invocation, Subparsers, dump
from rocbuild.errors import UsageError


def register(sub: Subparsers) -> None:
    p = sub.add_parser("doctor", help="preflight checks of ROCm, GPUs, device access, torch and installed "
                                      "extensions; exit 1 when one fails")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--python", metavar="PY", help="the Python whose torch and extensions are checked (default: this one)")
    p.add_argument("--rocm", metavar="PATH", help="ROCm prefix (default: as for build)")
    p.add_argument("--sysfs", metavar="ROOT",
                   help="look at a file tree standing in for / (its sys/, dev/, proc/, etc/group) instead")
    p.add_argument("--rocminfo", metavar="FILE", help="read this rocminfo output instead of running rocminfo")
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)
    p.set_defaults(handler=cmd_doctor)

    p = sub.add_parser("detect", help="show the GPUs, ROCm and python rocbuild finds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--arch", help="as for build: skips GPU detection")
    p.add_argument("--rocminfo", metavar="FILE", help="read this rocminfo output instead of running rocminfo")
    p.add_argument("--sysfs", metavar="ROOT", help="read KFD topology under ROOT instead of /sys")
    p.add_argument("--rocm", metavar="PATH")
    p.add_argument("--python", metavar="PY")
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)
    p.set_defaults(handler=cmd_detect)


def cmd_doctor(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.doctor.run as doctor
    from rocbuild.detect.python import find_python

    if args.sysfs is not None and not Path(args.sysfs).is_dir():
        raise UsageError(f"--sysfs {args.sysfs}: no such folder")
    if args.rocminfo is not None and not Path(args.rocminfo).is_file():
        raise UsageError(f"--rocminfo {args.rocminfo}: no such file")
    if args.python is not None:
        find_python(args.python)  # a missing or broken interpreter is a usage error (exit 2)
    inputs = doctor.Inputs(root=Path(args.sysfs) if args.sysfs else None,
                           rocminfo=Path(args.rocminfo) if args.rocminfo else None, rocm=args.rocm,
                           python=args.python, environ=dict(inv.environ))
    checks = doctor.run_doctor(inputs)
    if args.json:
        dump(doctor.report_json(checks))
    else:
        print(doctor.report_text(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def cmd_detect(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.cli.show as show
    from rocbuild.detect.arch import detect_archs
    from rocbuild.detect.jobs import available_memory, choose_jobs, cores
    from rocbuild.detect.python import find_python
    from rocbuild.detect.rocm import find_rocm

    detection = detect_archs(
        args.arch,
        rocminfo_file=Path(args.rocminfo) if args.rocminfo else None,
        sysfs_root=Path(args.sysfs) if args.sysfs else None,
        environ=inv.environ,
    )
    python = find_python(args.python)
    rocm = find_rocm(args.rocm, inv.environ, python=python.executable)
    jobs = choose_jobs(asked=None, per_job=None, available=available_memory(), budget=None, cpus=cores()).count
    if args.json:
        data = detection.to_json()
        data["rocm"] = rocm.to_json() if rocm else None
        data["python"] = python.to_json()
        data["jobs"] = jobs
        dump(data)
        return 0
    show.detect_text(detection, rocm, python, jobs)
    return 0
