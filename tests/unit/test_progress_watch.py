"""How far a running step is, read from its own output (rocbuild/progress.py): ninja's [n/m], CMake's
[ nn%] and setuptools' per-extension lines, as real tools print them; a plain line at intervals where
the terminal cannot redraw, and a live line where it can."""

from __future__ import annotations

import io
import time

from rocbuild.progress import Progress, Reading, StepWatch

NINJA_OUT = ("[1/3] /usr/bin/hipcc -c a.hip -o a.o\n[2/3] /usr/bin/hipcc -c b.hip -o b.o\n"
             "\r[3/3] c++ -shared a.o b.o -o _C.so\n")
CMAKE_OUT = "[  4%] Building HIP object CMakeFiles/x.dir/a.hip.o\n[ 52%] Linking CXX shared library libx.so\n"
SETUPTOOLS_OUT = ("running build_ext\nbuilding 'pkg._ops' extension\n[1/2] hipcc ...\n"
                  "building 'pkg._more' extension\n")


def test_each_tools_progress_is_read():
    ninja, cmake, exts = Reading(), Reading(), Reading()
    for line in NINJA_OUT.splitlines():
        ninja.feed(line.rsplit("\r", 1)[-1])
    for line in CMAKE_OUT.splitlines():
        cmake.feed(line)
    for line in SETUPTOOLS_OUT.splitlines():
        exts.feed(line)
    assert (ninja.done, ninja.total, ninja.text()) == (3, 3, "3/3 compile units")
    assert cmake.text() == "52%"
    assert exts.text() == "extension 2 (pkg._more), 1/2 compile units"
    assert Reading().text() == "running"


def test_where_nothing_redraws_a_plain_line_comes_at_intervals_and_output_split_anywhere_is_read():
    terminal = io.StringIO()
    clock = [100.0]
    watch = StepWatch("[1/1] wheel", terminal, live=False, estimate="the records: 10 min", interval=0.01,
                      now=lambda: clock[0])
    clock[0] = 175.0
    for piece in ("[12/7", "04] hipcc -c k.hip\n[13/704]", " hipcc ...\n"):
        watch.write(piece)
    deadline = time.monotonic() + 5
    while "13/704" not in terminal.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    watch.close()
    line = terminal.getvalue().splitlines()[-1]
    assert line == "    [1/1] wheel: 13/704 compile units, 1m15s (the records: 10 min)"


def test_nothing_is_watched_with_v_or_json_or_quiet():
    assert Progress(io.StringIO()).watch("x") is None  # watching is asked for by the command line
    assert Progress(io.StringIO(), quiet=True, watch=True).watch("x") is None
    watch = Progress(io.StringIO(), watch=True).watch("x")
    assert isinstance(watch, StepWatch)
    watch.close()
