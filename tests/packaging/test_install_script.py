"""packaging/install.py, the README's set-up: llama.cpp is built for the CPU that builds it, never with AMX, and a
wheel built with other options is never reused."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAPPHIRE_RAPIDS = (
    "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni "
    "avx512_bf16 avx_vnni amx_bf16 amx_tile amx_int8\n"
)


def _install():
    spec = importlib.util.spec_from_file_location("specchat_install", ROOT / "packaging" / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cpu_with_amx_gets_every_other_extension_and_no_amx():
    options = _install().cpu_cmake_args(SAPPHIRE_RAPIDS)
    assert "-DGGML_NATIVE=OFF" in options
    assert {
        "-DGGML_AVX512=ON",
        "-DGGML_AVX512_VNNI=ON",
        "-DGGML_AVX512_BF16=ON",
        "-DGGML_AVX_VNNI=ON",
        "-DGGML_AVX2=ON",
    } <= set(options)
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(options)
    assert not any("AMX" in option and option.endswith("=ON") for option in options)


def test_a_cpu_without_avx512_does_not_get_it():
    options = _install().cpu_cmake_args("flags\t: fpu sse avx avx2 fma f16c\n")
    assert "-DGGML_AVX512=OFF" in options and "-DGGML_AVX2=ON" in options and "-DGGML_BMI2=OFF" in options


def test_user_options_come_last_so_they_win():
    options = _install().build_options("-DGGML_CUDA=on -DGGML_AVX512=OFF")
    assert options[0] == "-DGGML_RPC=ON" and options[-2:] == ["-DGGML_CUDA=on", "-DGGML_AVX512=OFF"]


def test_the_readme_sets_up_through_the_script():
    lines = (ROOT / "README.md").read_text().splitlines()
    commands = [line for line in lines[:8] if line.endswith(("# run the app", "# run the tests"))]
    assert len(commands) == 2 and all(line.startswith("python3 packaging/install.py") for line in commands)


def test_the_installed_build_has_no_amx_kernels():
    # The build this suite runs on came from the README's command.
    import llama_cpp

    assert b"AMX" not in llama_cpp.llama_print_system_info()


def test_a_source_archive_is_built_offline_with_the_tools_installed(tmp_path, monkeypatch):
    """The GPU check builds on a machine that cannot download: pip gets the archive and no index."""
    install = _install()
    ran = []

    def fake_run(cmd, **kwargs):
        ran.append(cmd)
        if "wheel" in cmd:
            (Path(cmd[cmd.index("-w") + 1]) / "llama_cpp_python-0.3.36-cp311-linux_x86_64.whl").write_text("")

    monkeypatch.setattr(install, "run", fake_run)
    monkeypatch.setattr(install, "wheel_cache", lambda: tmp_path / "cache")
    source = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    wheel = install.built_wheel("0.3.36", ["-DGGML_CUDA=ON"], True, Path(sys.executable), source)
    pip = ran[0]
    assert str(source) in pip and "--no-index" in pip and "--no-build-isolation" in pip
    assert wheel.is_file()
