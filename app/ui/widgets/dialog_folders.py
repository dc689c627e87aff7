"""Where each file dialog opens: the folder last used for that kind of file, else a sensible one for it (Documents
to attach and export, Pictures for images, Downloads for models), never the working directory the app was started
in. Remembered between runs in the config folder. GUI thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from PySide6.QtCore import QSettings, QStandardPaths

from app.platform import paths

DialogKind = Literal["attach", "export", "image", "models", "template"]
_DEFAULTS = {
    "attach": QStandardPaths.StandardLocation.DocumentsLocation,
    "export": QStandardPaths.StandardLocation.DocumentsLocation,
    "image": QStandardPaths.StandardLocation.PicturesLocation,
    "models": QStandardPaths.StandardLocation.DownloadLocation,
    "template": QStandardPaths.StandardLocation.DocumentsLocation,
}


def _settings() -> QSettings:
    return QSettings(str(paths.user_config_dir() / "dialogs.ini"), QSettings.Format.IniFormat)


def start_folder(kind: DialogKind) -> str:
    """The folder a `kind` dialog opens in: the last one used, if it still exists, else the default for it."""
    last = _settings().value(f"folders/{kind}")
    if isinstance(last, str) and last and Path(last).is_dir():
        return last
    default = QStandardPaths.writableLocation(_DEFAULTS[kind])
    return default if default and Path(default).is_dir() else str(Path.home())


def remember_folder(kind: DialogKind, chosen: str) -> None:
    """Keep the folder of `chosen` (a file, or a folder for a folder dialog) for the next `kind` dialog."""
    if not chosen:
        return
    path = Path(chosen)
    folder = path if path.is_dir() else path.parent
    try:
        settings = _settings()
        settings.setValue(f"folders/{kind}", str(folder))
        settings.sync()
    except Exception:  # a folder that cannot be remembered is no reason to fail what the dialog was for
        pass
