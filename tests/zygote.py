"""A warm process that forks: the kill tests' victims.

A kill test proves that a run killed with SIGKILL (what a crash or an OOM kill looks like) loses
nothing and repeats nothing when run again. Each victim must be a real process, killed for real;
starting a cold `python -m healjson` for each one costs seconds of imports. So one process,
started once per test session with no thread running, imports everything a victim needs, then
forks one child per run: the child is the victim (its own process, its own pid), warm from the
first instruction.

A run names a function (`module:name`, importable here, e.g. in `victims`) and its keyword
arguments; the child calls it with its stdout on /dev/null and its stderr in the file the run
gives, and exits with 0, the `SystemExit` code, or 1 on an exception. The parent hears the
child's pid as soon as it is forked (to kill it from outside) and its wait status when it ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["Victim", "Zygote"]

_SERVE = textwrap.dedent(
    """
    import importlib, json, os, sys, traceback

    for name in json.loads(sys.argv[1]):
        importlib.import_module(name)  # warm: imported once, in every child already

    def call(task):
        module, _, name = task["call"].partition(":")
        return getattr(importlib.import_module(module), name)(**task["kwargs"])

    for line in sys.stdin:
        task = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)  # the parent's answers travel on stdout: nothing else may
                err = os.open(task["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                os.dup2(err, 2)
                call(task)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        signal_ = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        print(json.dumps({"signal": signal_, "code": code}), flush=True)
    """
)


@dataclass
class Victim:
    """A forked run: its pid (to kill it), then its end (`wait`)."""

    pid: int
    stderr: Path
    _answers: IO[str]

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> dict[str, Any]:
        """`{"signal": N or 0, "code": exit code or None}` once the run ended."""
        ended: dict[str, Any] = json.loads(self._answers.readline())
        return ended

    def errors(self) -> str:
        """What the run wrote on stderr."""
        return self.stderr.read_text(encoding="utf-8", errors="replace")


class Zygote:
    """The warm process; `warm` names the modules it imports before its first fork."""

    def __init__(self, warm: list[str], path: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, json.dumps(warm)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self._runs = 0

    def start(self, call: str, stderr: Path, **kwargs: Any) -> Victim:
        """Fork a child that calls `call(**kwargs)`; its stderr goes to the file `stderr`.
        Wait for this victim before starting another."""
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        task = {"call": call, "kwargs": kwargs, "stderr": str(stderr)}
        self._process.stdin.write(json.dumps(task) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the zygote process ended")
        return Victim(int(json.loads(line)["pid"]), stderr, self._process.stdout)

    def run(self, call: str, stderr: Path, **kwargs: Any) -> dict[str, Any]:
        """Start a run and wait for its end (a run that kills itself, or ends)."""
        return self.start(call, stderr, **kwargs).wait()

    def close(self) -> None:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)
        self._process.stdout.close()
