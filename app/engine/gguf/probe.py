"""Will llama.cpp load this model and tokenize with it, asked of a short-lived child process that may die instead.

llama.cpp aborts the whole process (GGML_ASSERT) on some files it does not validate. The header checks in
app.engine.gguf.checks catch the cases we know; the probe catches the rest: a child Python loads the vocabulary only
(vocab_only, no weights) and tokenizes a short text with the special tokens added, which is where those asserts
fire. If the child dies, its last words on stderr (the GGML_ASSERT line) become the reason.

Verdicts are cached on disk by (path, size, mtime, llama-cpp-python version), so a file is probed once. Several
files (a target and its draft) are probed by one child, one after the other: starting Python and llama.cpp is most
of a probe's time. When a file kills the child, the ones after it are probed by another.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from app.common.json_cache import read_cache, section, write_cache
from app.engine.gguf.compat_cache import file_key
from app.engine.child_process import build_fault_sentence, how_it_ended, is_build_fault, last_error_line
from app.engine.errors import BuildFaultError, ModelFileError
from app.engine.gguf.info import inspect_gguf
from app.platform.paths import user_cache_dir

CACHE_FILE_NAME = "model-probe.json"
_CACHE_VERSION = 1
_MAX_CACHED = 2000
PROBE_TIMEOUT_S = 120.0
PROBE_TEXT = "Hello, world!\n"

# Runs in the child, for each file named: a line "<index> <code>" on stdout, 0 when its vocabulary loads and
# tokenizes, 3 when llama.cpp refuses the file, 4 when it makes no tokens. Each file's log starts after a marker line
# on stderr, so that a refusal's reason is that file's.
_CHILD = r"""
import ctypes, os, sys
import llama_cpp

@llama_cpp.llama_log_callback
def log(level, text, user_data):
    os.write(2, text)

llama_cpp.llama_log_set(log, ctypes.c_void_p(0))
llama_cpp.llama_backend_init()
text = sys.argv[1].encode("utf-8")
for index, name in enumerate(sys.argv[2:]):
    os.write(2, b"\nspecchat-probe-next-file@%d\n" % index)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(name.encode("utf-8"), params)
    if not model:
        code = 3
    else:
        vocab = llama_cpp.llama_model_get_vocab(model)
        out = (llama_cpp.llama_token * 256)()
        n = llama_cpp.llama_tokenize(vocab, text, len(text), out, 256, True, True)
        llama_cpp.llama_model_free(model)
        code = 0 if n > 0 else 4
    os.write(1, b"%d %d\n" % (index, code))
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
    return probe_models([path], use_cache=use_cache, timeout=timeout)[0]


def probe_models(
    paths: Sequence[Union[str, Path]], *, use_cache: bool = True, timeout: float = PROBE_TIMEOUT_S
) -> list[ProbeVerdict]:
    """probe_model for several files at once: those not cached are probed by one child process.

    Raises ModelFileError when a file cannot be read at all.
    """
    files = [Path(p) for p in paths]
    keys = [_cache_key(p) for p in files]
    verdicts: dict[int, ProbeVerdict] = {}
    if use_cache:
        with _lock:
            cache = _load_cache(_cache_path())
        for i, key in enumerate(keys):
            cached = cache.get(key)
            if isinstance(cached, dict):
                try:
                    verdicts[i] = ProbeVerdict(**cached)
                except TypeError:
                    pass
    todo = [i for i in range(len(files)) if i not in verdicts]
    for i, verdict in zip(todo, _run_children([files[i] for i in todo], timeout)):
        verdicts[i] = verdict
    if use_cache and todo:
        with _lock:
            cache = _load_cache(_cache_path())
            for i in todo:
                cache[keys[i]] = asdict(verdicts[i])
            while len(cache) > _MAX_CACHED:
                cache.pop(next(iter(cache)))
            write_cache(_cache_path(), _CACHE_VERSION, {"files": cache})  # unwritable: probing again next time
    return [verdicts[i] for i in range(len(files))]


def _run_children(paths: list[Path], timeout: float) -> list[ProbeVerdict]:
    """Verdicts for `paths`: one child for all; after a file that killed it, another for the rest."""
    verdicts: list[ProbeVerdict] = []
    while len(verdicts) < len(paths):
        verdicts += _run_child(paths[len(verdicts) :], timeout)
    return verdicts


def _run_child(paths: list[Path], timeout: float) -> list[ProbeVerdict]:
    """Verdicts for a first part of `paths` (at least one): up to the file that killed the child, if one did."""
    try:
        name = os.fsdecode(paths[0])
        name.encode("utf-8")
    except UnicodeError:
        return [ProbeVerdict(False, "the file name is not valid UTF-8, which llama.cpp cannot open; rename the file")]
    names = [name]
    for path in paths[1:]:  # a later name that is not UTF-8 waits for a child of its own
        try:
            names.append(os.fsdecode(path))
            names[-1].encode("utf-8")
        except UnicodeError:
            names.pop()
            break
    # GGML_NO_BACKTRACE: ggml's abort otherwise attaches gdb to print a backtrace, slow and noisy.
    env = dict(os.environ, GGML_NO_BACKTRACE="1", PYTHONFAULTHANDLER="")
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, PROBE_TEXT, *names],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout * len(names),
        )
    except subprocess.TimeoutExpired:
        return [ProbeVerdict(False, f"llama.cpp did not finish reading the vocabulary within {timeout:.0f} s")]
    except OSError as exc:
        return [ProbeVerdict(False, f"could not start a process to check the model ({exc})")]
    logs = re.split(r"\nspecchat-probe-next-file@\d+\n", done.stderr.decode("utf-8", errors="replace"))[1:]
    codes = [
        int(line.split()[1])
        for line in done.stdout.decode("ascii", errors="replace").splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    ]
    verdicts = []
    for index, code in enumerate(codes):
        log = logs[index] if index < len(logs) else ""
        if code == 0:
            verdicts.append(ProbeVerdict(True, ""))
        elif code == 3:
            verdicts.append(ProbeVerdict(False, f"llama.cpp cannot load it: {last_error_line(log) or 'no details'}"))
        else:
            verdicts.append(ProbeVerdict(False, "llama.cpp turns text into no tokens with this vocabulary"))
    if len(verdicts) < len(names) and is_build_fault(done.returncode):
        raise BuildFaultError(build_fault_sentence())  # no file's fault, and not cached as one
    if len(verdicts) < len(names):  # the child died on the next file
        log = logs[len(verdicts)] if len(verdicts) < len(logs) else done.stderr.decode("utf-8", errors="replace")
        returncode = done.returncode if done.returncode != 0 else 1
        detail = last_error_line(log) or how_it_ended(returncode)
        verdicts.append(ProbeVerdict(False, f"llama.cpp crashes on it: {detail}"))
    return verdicts


def check_model_files(paths: Sequence[Union[str, Path]], *, probe: bool = True) -> list[Optional[str]]:
    """For each of `paths`, None when llama.cpp can load it, else one sentence saying why not: the header checks
    first (fast), then, with `probe`, the child-process probe for what a header cannot show. One child probes them
    all while this process reads their headers (a first use's wait is mostly that child starting), and a header's
    problem comes first."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="SpecChat probe") as pool:
        probing = pool.submit(probe_models, paths) if probe else None
        problems: list[Optional[str]] = []
        for path in paths:
            try:
                info = inspect_gguf(path)
                problems.append(None if info.usable else f"{path}: cannot be used: {info.problem}")
            except ModelFileError as exc:
                problems.append(str(exc))
        try:
            verdicts = probing.result() if probing is not None else []
        except (ModelFileError, BuildFaultError) as exc:
            return [problem or str(exc) for problem in problems]
    for i, verdict in enumerate(verdicts):
        if problems[i] is None and not verdict.ok:
            problems[i] = f"{paths[i]}: {verdict.reason}"
    return problems
