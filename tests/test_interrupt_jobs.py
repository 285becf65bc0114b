"""Issue 26 review, item 5: Ctrl-C during `plan --verify --jobs 2` stops the worker processes at once:
the process exits 130 within seconds (it used to wait ~20 s while the workers worked through the calls
already queued, and a second Ctrl-C printed a traceback from concurrent.futures' exit hook and hung).

A real SIGINT to a real subprocess (the parent alone, as `kill -INT`; then its whole process group, as
a terminal's Ctrl-C), once its worker processes are up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SLOW_PLAN = ["plan", "--gpus", "2", "--ttft-ms", "500", "--tpot-ms", "20", "--verify", "5", "--rate", "20",
             "-n", "30000", "--jobs", "2"]  # ~40 s of serving: far longer than the test waits


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the worker processes from /proc")
@pytest.mark.parametrize("group", [False, True], ids=["parent", "process-group"])
def test_ctrl_c_with_jobs_exits_130_at_once_without_a_traceback(group):
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "llm_cost.cli", *SLOW_PLAN], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert len(workers) >= 2, "the two worker processes never started"
        time.sleep(1.0)  # the workers are serving, the rest of the candidates queued
        start = time.monotonic()
        for _ in range(2):  # Ctrl-C, then Ctrl-C again
            try:
                os.killpg(proc.pid, signal.SIGINT) if group else proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                break
            time.sleep(0.3)
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 130, text
    assert took < 5, f"exited {took:.1f} s after Ctrl-C"
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "interrupted: " in text and " of 5 candidates served" in text
    assert not any(Path(f"/proc/{w}").exists() and "zombie" not in Path(f"/proc/{w}/status").read_text()
                   for w in workers), "a worker process outlived the run"
