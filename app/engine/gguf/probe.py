"""Will llama.cpp load this model and tokenize with it, asked of a short-lived child process that may die instead.

llama.cpp aborts the whole process (GGML_ASSERT) on some files it does not validate. The header checks in
app.engine.gguf.checks catch the cases we know; the probe catches the rest: a child Python loads the vocabulary only
(vocab_only, no weights) and tokenizes a short text with the special tokens added, which is where those asserts
fire. If the child dies, its last words on stderr (the GGML_ASSERT line) become the reason.

Verdicts are cached on disk by (path, size, mtime, llama-cpp-python version), so a file is probed once.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Union

from app.common.json_cache import read_cache, section, write_cache
from app.engine.gguf.compat_cache import file_key
from app.engine.errors import ModelFileError
from app.engine.gguf.info import inspect_gguf
from app.platform.paths import user_cache_dir

CACHE_FILE_NAME = "model-probe.json"
_CACHE_VERSION = 1
_MAX_CACHED = 2000
PROBE_TIMEOUT_S = 120.0
PROBE_TEXT = "Hello, world!\n"
# "/build/dir/vendor/llama.cpp/src/llama-vocab.cpp:588: GGML_ASSERT(...)" -> "llama-vocab.cpp:588: GGML_ASSERT(...)"
_ASSERT_SOURCE = re.compile(r"^\S*/([^/\s]+:\d+:)")

# Runs in the child: exit 0 when the vocabulary loads and tokenizes, 3 when llama.cpp refuses the file.
_CHILD = r"""
import ctypes, os, sys
import llama_cpp

@llama_cpp.llama_log_callback
def log(level, text, user_data):
    os.write(2, text)

llama_cpp.llama_log_set(log, ctypes.c_void_p(0))
llama_cpp.llama_backend_init()
params = llama_cpp.llama_model_default_params()
params.vocab_only = True
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode("utf-8"), params)
if not model:
    sys.exit(3)
vocab = llama_cpp.llama_model_get_vocab(model)
text = sys.argv[2].encode("utf-8")
out = (llama_cpp.llama_token * 256)()
n = llama_cpp.llama_tokenize(vocab, text, len(text), out, 256, True, True)
llama_cpp.llama_model_free(model)
sys.exit(0 if n > 0 else 4)
"""


@dataclass(frozen=True)
class ProbeVerdict:
    ok: bool
    reason: str  # why llama.cpp cannot use the file, in one line; "" when ok


def _llama_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        return "unknown"


def _cache_path() -> Path:
    return user_cache_dir() / CACHE_FILE_NAME


_lock = threading.Lock()


def _load_cache(path: Path) -> dict:
    return section(read_cache(path, _CACHE_VERSION), "files")


def _cache_key(path: Path) -> str:
    resolved, size, mtime_ns = file_key(path)
    return f"{resolved}\x1f{size}\x1f{mtime_ns}\x1f{_llama_version()}"


def probe_model(path: Union[str, Path], *, use_cache: bool = True, timeout: float = PROBE_TIMEOUT_S) -> ProbeVerdict:
    """Whether llama.cpp loads `path`'s vocabulary and tokenizes with it, without risking this process.

    Raises ModelFileError when the file cannot be read at all.
    """
    path = Path(path)
    key = _cache_key(path)
    cache_file = _cache_path()
    if use_cache:
        with _lock:
            cached = _load_cache(cache_file).get(key)
        if isinstance(cached, dict):
            try:
                return ProbeVerdict(**cached)
            except TypeError:
                pass
    verdict = _run_child(path, timeout)
    if use_cache:
        with _lock:
            files = _load_cache(cache_file)
            files[key] = asdict(verdict)
            while len(files) > _MAX_CACHED:
                files.pop(next(iter(files)))
            write_cache(cache_file, _CACHE_VERSION, {"files": files})  # unwritable: probing again next time
    return verdict


def _run_child(path: Path, timeout: float) -> ProbeVerdict:
    try:
        name = os.fsdecode(path)
        name.encode("utf-8")
    except UnicodeError:
        return ProbeVerdict(False, "the file name is not valid UTF-8, which llama.cpp cannot open; rename the file")
    # GGML_NO_BACKTRACE: ggml's abort otherwise attaches gdb to print a backtrace, slow and noisy.
    env = dict(os.environ, GGML_NO_BACKTRACE="1", PYTHONFAULTHANDLER="")
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, name, PROBE_TEXT], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ProbeVerdict(False, f"llama.cpp did not finish reading the vocabulary within {timeout:.0f} s")
    except OSError as exc:
        return ProbeVerdict(False, f"could not start a process to check the model ({exc})")
    stderr = done.stderr.decode("utf-8", errors="replace")
    if done.returncode == 0:
        return ProbeVerdict(True, "")
    if done.returncode == 3:
        return ProbeVerdict(False, f"llama.cpp cannot load it: {last_error_line(stderr) or 'no details'}")
    if done.returncode == 4:
        return ProbeVerdict(False, "llama.cpp turns text into no tokens with this vocabulary")
    detail = last_error_line(stderr) or _signal_name(done.returncode)
    return ProbeVerdict(False, f"llama.cpp crashes on it: {detail}")


def last_error_line(stderr: str) -> str:
    """The line of llama.cpp's output that says what went wrong: the assert that fired, else the model loader's
    reason, else the first error."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if "GGML_ASSERT" in line or "GGML_ABORT" in line:
            return _short(_ASSERT_SOURCE.sub(r"\1", line))
    for line in lines:
        _, found, reason = line.partition("error loading model: ")
        if found and not reason.startswith("llama_model_loader: failed to load model"):
            return _short(reason)
    errors = [line for line in lines if "error" in line.lower() or "fail" in line.lower()]
    return _short((errors or lines or [""])[0])


def _short(line: str) -> str:
    return line if len(line) <= 300 else line[:297] + "..."


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def check_model_file(path: Union[str, Path], *, probe: bool = True) -> Optional[str]:
    """None when llama.cpp can load `path`, else one sentence saying why not: the header checks first (fast), then,
    with `probe`, the child-process probe for what a header cannot show."""
    try:
        info = inspect_gguf(path)
    except ModelFileError as exc:
        return str(exc)
    if not info.usable:
        return f"{path}: cannot be used: {info.problem}"
    if probe:
        verdict = probe_model(path)
        if not verdict.ok:
            return f"{path}: {verdict.reason}"
    return None
