"""The bundle's entry point: the same `main()` as the `specchat` command of a pip install.

A few flags are answered here, before the window code loads, because the bundle has no `specchat-cli` and no
Python prompt to ask it things with:

    SpecChat --install-desktop      add SpecChat to this user's application menu (Linux), pointing at this bundle
    SpecChat --uninstall-desktop    remove it again
    SpecChat --print-paths          the folders for chats, settings and models, as JSON (the same as a pip install's)
    SpecChat --check-bundle         import what the app loads only on demand and open an HTTPS client, to prove
                                    the build collected it
"""

from __future__ import annotations

import json
import sys

# Modules the app imports only when a feature is used (huggingface_hub resolves its names lazily), so a build
# that missed one would start fine and fail later; --check-bundle finds that at build time.
ON_DEMAND_IMPORTS = (
    ("huggingface_hub", ("HfApi", "get_hf_file_metadata", "get_session", "hf_hub_url", "scan_cache_dir")),
    ("huggingface_hub.utils", ()),
    ("huggingface_hub.constants", ()),
    ("jinja2.sandbox", ("ImmutableSandboxedEnvironment",)),
    ("llama_cpp", ("llama_backend_init",)),
    ("gguf", ("GGUFReader", "GGUFWriter")),
    ("PySide6.QtSvg", ("QSvgRenderer",)),
    ("PySide6.QtNetwork", ("QLocalServer", "QLocalSocket")),
    ("app.ui.shell.single_instance", ()),
    ("app.ui.inspector.window", ("ReplyInspector",)),  # pyqtgraph, which loads QtOpenGL by name
    ("PySide6.QtOpenGLWidgets", ("QOpenGLWidget",)),
    ("app.hub.client", ()),
    ("app.hub.discovery", ()),
    ("app.hub.download", ()),
    ("app.hub.token", ()),
    ("app.testing.synthetic", ()),
    # The local API, started in the engine process when its switch is on; uvicorn loads its protocol by name.
    ("app.serve.server", ("ApiServer",)),
    ("uvicorn.protocols.http.h11_impl", ("H11Protocol",)),
    ("uvicorn.lifespan.off", ("LifespanOff",)),
)


def print_paths() -> int:
    from app.platform import paths

    print(json.dumps(paths_report(paths), indent=2))
    return 0


def paths_report(paths) -> dict[str, str]:
    """Every location app.platform.paths resolves, by name; the packaging test compares the bundle's with a pip install's."""
    names = ("user_data_dir", "user_config_dir", "user_cache_dir", "models_dir", "database_path", "settings_path")
    return {name: str(getattr(paths, name)()) for name in names}


def check_bundle() -> int:
    import importlib

    missing = []
    for module_name, attributes in ON_DEMAND_IMPORTS:
        try:
            module = importlib.import_module(module_name)
            for attribute in attributes:
                getattr(module, attribute)
        except Exception as exc:  # a report line per module, not a trace
            missing.append(f"{module_name}: {type(exc).__name__}: {exc}")
    try:  # the Hub client's HTTPS session: needs the ssl module, OpenSSL and the CA certificates in the bundle
        import huggingface_hub

        huggingface_hub.get_session()
    except Exception as exc:
        missing.append(f"HTTPS session: {type(exc).__name__}: {exc}")
    for line in missing:
        print(f"check-bundle: missing {line}", file=sys.stderr)
    if missing:
        return 1
    print(f"check-bundle: ok ({len(ON_DEMAND_IMPORTS)} modules)")
    return 0


def main() -> int:
    flag = sys.argv[1] if len(sys.argv) == 2 else ""
    if flag in ("--install-desktop", "--uninstall-desktop"):
        from app.platform import desktop_entry

        return desktop_entry.main(["install" if flag == "--install-desktop" else "uninstall"])
    if flag == "--print-paths":
        return print_paths()
    if flag == "--check-bundle":
        return check_bundle()
    from app.ui.shell.main import main as window_main

    return window_main()


if __name__ == "__main__":
    import multiprocessing

    # The engine runs in a child process started with "spawn": in the bundle that child is this same executable,
    # and freeze_support() turns it into the engine worker before any of the window's code runs.
    multiprocessing.freeze_support()
    raise SystemExit(main())
