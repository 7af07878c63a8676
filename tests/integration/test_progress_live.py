"""How far a running step is, shown while a real process prints ninja's progress: the step's log holds its
output and nothing of the progress display; a pipe gets plain lines, a terminal (a real pty) a live line
that rich draws and clears."""

from __future__ import annotations

import io
import os
import pty
import select

from rocbuild.process.runner import Runner
from rocbuild.progress import Progress, StepWatch

SCRIPT = 'echo "[1/2] hipcc -c a.hip"; sleep 0.3; echo "[2/2] hipcc -c b.hip"; sleep 0.3'


def test_a_pipe_gets_plain_lines_and_the_log_only_the_steps_output(tmp_path):
    terminal = io.StringIO()
    watch = StepWatch("[1/1] wheel", terminal, live=False, interval=0.1)
    log = tmp_path / "01-wheel.log"
    try:
        result = Runner().run(None, cwd=tmp_path, log=log, shell=SCRIPT, watch=watch)
    finally:
        watch.close()
    assert result.exit_code == 0
    said = terminal.getvalue().splitlines()
    assert said and all(line.startswith("    [1/1] wheel: ") for line in said)
    assert "2/2 compile units" in said[-1]
    text = log.read_text()
    assert "[2/2] hipcc -c b.hip" in text and "compile units" not in text


def test_a_terminal_gets_a_live_line_that_is_cleared_when_the_step_ends(tmp_path):
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w")
    try:
        watch = Progress(terminal, watch=True).watch("[1/1] wheel")
        assert watch is not None
        Runner().run(None, cwd=tmp_path, log=tmp_path / "log", shell=SCRIPT, watch=watch)
        watch.close()
        terminal.flush()
        shown = b""
        while select.select([master], [], [], 0.2)[0]:
            shown += os.read(master, 65536)
    finally:
        terminal.close()
        os.close(master)
    assert b"2/2 compile units" in shown and b"\x1b[" in shown  # drawn in place, with terminal controls
