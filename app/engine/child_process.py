"""What a llama.cpp child process's end says: its last error line, its signal's name, and whether the build itself
cannot run on this machine. One copy for every child: the engine process, the model probe, the RPC check, the CLI.

Plain Python, no llama_cpp: the window reads a dead worker's log with it.
"""

from __future__ import annotations

import re
import signal
import sys

_ASSERT_SOURCE = re.compile(r"^\S*/([^/\s]+:\d+:)")
_LINE_LIMIT = 300

# The rebuild a person runs from a source checkout; a bundle is rebuilt by whoever made it.
REBUILD_COMMAND = "python3 packaging/install.py --rebuild"


def last_error_line(log_text: str) -> str:
    """The line of llama.cpp's output that best says what went wrong: the last assert or abort that fired, else the
    model loader's reason, else the last line that says error, fail or terminate, else the last line."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "GGML_ASSERT" in line or "GGML_ABORT" in line:
            return _short(_ASSERT_SOURCE.sub(r"\1", line))
    for line in lines:
        _, found, reason = line.partition("error loading model: ")
        if found and not reason.startswith("llama_model_loader: failed to load model"):
            return _short(reason)
    for line in reversed(lines):
        lowered = line.lower()
        if "error" in lowered or "fail" in lowered or "terminate called" in lowered or "what():" in lowered:
            return _short(line)
    return _short(lines[-1]) if lines else ""


def log_error_line(path: str | None, tail_bytes: int = 16384, since: int = 0) -> str:
    """last_error_line of a child's log file's last `tail_bytes` (its last words); "" when it cannot be read.

    `since` (a log_size taken earlier): only what the child wrote after it counts, so a crash is never blamed on
    what an earlier request, long finished, wrote there."""
    if not path:
        return ""
    try:
        with open(path, "rb") as log:
            log.seek(0, 2)
            log.seek(max(since, log.tell() - tail_bytes, 0))
            return last_error_line(log.read().decode("utf-8", errors="replace"))
    except OSError:
        return ""


def log_size(path: str | None) -> int:
    """How far a child's log reaches now (0 when it cannot be read): log_error_line's `since`."""
    import os

    try:
        return os.path.getsize(path) if path else 0
    except OSError:
        return 0


def _short(line: str) -> str:
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 3] + "..."


def signal_of(returncode: int | None) -> int | None:
    """The signal that ended a child: a negative return code (subprocess, multiprocessing) or a shell's 128 + N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def how_it_ended(returncode: int | None) -> str:
    """ "killed by SIGSEGV", "exit status 3": for a sentence about a child that died. The one place a child's end
    is put in words (the CLI's checks and the window's engine process both use it)."""
    if returncode is not None and returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    if returncode is None:
        return "no exit status"
    return f"exit status {returncode}"


def is_build_fault(returncode: int | None) -> bool:
    """True when the child died because this llama.cpp build uses instructions the CPU cannot run (SIGILL): no
    model file is to blame, and running it again crashes again."""
    return signal_of(returncode) == getattr(signal, "SIGILL", 4)


def build_fault_sentence() -> str:
    """The one sentence a person gets for a SIGILL, in the window and in the CLI."""
    how = (
        f"rebuild it for this machine with `{REBUILD_COMMAND}` in SpecChat's folder"
        if not getattr(sys, "frozen", False)
        else "this copy of SpecChat must be rebuilt on (or for) this machine's CPU"
    )
    return (
        "llama.cpp stopped with an illegal instruction (SIGILL): this build of llama.cpp uses CPU instructions "
        "this machine cannot run (often AMX or AVX-512 on a virtual machine). It is not the model file: "
        f"{how}."
    )


def run_supervised(command: list[str]) -> int:
    """Run `command` (a front end that loads llama.cpp in its own process) as a child and end as it ended, saying
    first, in one sentence on stderr, what killed it (death_sentence): a process killed by SIGILL, SIGSEGV or
    SIGKILL cannot say it itself.

    Signals sent to this process are passed on to the child, except a Ctrl-C typed at the terminal, which reaches
    the child through the terminal's process group already (passing it on too would interrupt its clean-up). Any
    other death by a signal is re-raised here, so callers see the same status as without the supervisor; SIGKILL,
    which no process may re-raise on itself with a handler reset, becomes exit status 137, as a shell reports it.
    """
    import os
    import subprocess

    child = subprocess.Popen(
        command,
        env=dict(os.environ, SPECCHAT_SUPERVISED="1"),
        preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
    )

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and _typed_at_terminal():
            return
        child.send_signal(signum)

    names = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCONT")
    previous = {}
    for signum in (getattr(signal, name) for name in names if hasattr(signal, name)):
        previous[signum] = signal.signal(signum, forward)
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:  # a handler replaced by the time the signal arrived: wait on
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    sentence = death_sentence(code)
    if sentence:
        sys.stderr.write(f"specchat-cli: {sentence}\n")
        sys.stderr.flush()
    if code == -signal.SIGKILL:
        return 128 + signal.SIGKILL  # a shell's status for it: SIGKILL cannot be given a handler to re-raise with
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code  # where the signal does not end this process
    return code


def death_sentence(returncode: int | None) -> str:
    """What a person reads when the CLI's process was ended by a signal it did not get from them: "" for an exit,
    and for the signals a person or a system sends to stop a program (SIGINT, SIGTERM, SIGHUP, ...)."""
    signum = signal_of(returncode) if returncode is not None and returncode < 0 else None
    if signum is None:
        return ""
    if is_build_fault(returncode):
        return build_fault_sentence()
    if signum == signal.SIGKILL:
        return "the process was killed by SIGKILL, often the system running out of memory."
    if signum in _CRASH_SIGNALS:
        return (
            f"the process was {how_it_ended(returncode)}: llama.cpp (or a library under it) crashed; its own "
            "message, if it wrote one, is above."
        )
    return ""


_CRASH_SIGNALS = {
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGTRAP", "SIGSYS")
    if hasattr(signal, name)
}


def die_with_parent() -> None:
    """In a child, before it runs: end with its parent, so a parent killed outright leaves nothing (Linux; the
    death signal comes when the thread that started the child ends, so start children from a lasting thread)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def settle_child(log_path: str | None) -> None:
    """In a supervised child (app.engine.host.supervisor), before it runs: its fd 2 goes to `log_path`, where
    llama.cpp writes its assertion text just before abort() and the parent reads the file's tail to say what
    happened; ggml runs no debugger for a backtrace (seconds before a crash is reported); a Ctrl+C typed at a
    terminal, which reaches the whole process group, is the parent's to decide on (it asks the child to exit, where
    dying of it here would be reported as a crash); and the child ends with its parent."""
    import os

    os.environ["GGML_NO_BACKTRACE"] = "1"
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()


def _typed_at_terminal() -> bool:
    """Whether this process is in the foreground of a terminal, where a SIGINT is a Ctrl-C sent to the group."""
    import os

    for stream in (sys.stdin, sys.stderr):
        try:
            if stream is not None and stream.isatty() and os.tcgetpgrp(stream.fileno()) == os.getpgrp():
                return True
        except (OSError, ValueError, AttributeError):
            continue
    return False
