"""Make SpecChat's icon files from resources/specchat.svg.

    python packaging/render_icons.py                    # PNGs from the SVG (after editing it); commit the result
    python packaging/render_icons.py --platform DIR     # specchat.ico and specchat.icns from those PNGs (the build)

resources/ is the source. The PNGs are rendered with Qt's own SVG renderer (offscreen) and committed, so a build
never needs to render them and never changes tracked files. The SVG and PNGs are also copied to app/data/icons/,
which is package data: a pip install finds them there for the window icon and the desktop entry, and the bundle
collects them with the rest of app/data. The Windows .ico and macOS .icns are made at build time with Pillow, a
build-only dependency.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "specchat.svg"
PNG_DIR = ROOT / "resources" / "icons"
PACKAGE_ICON_DIR = ROOT / "app" / "data" / "icons"
# What freedesktop menus, Windows' .ico and the window icon want; 512 for app stores and large docks.
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
# Windows Explorer picks from these; 256 is the largest an .ico holds.
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# The sizes an .icns stores (Pillow writes the retina variants from the same images).
ICNS_SIZES = (16, 32, 64, 128, 256, 512)


def png_path(size: int, folder: Path = PNG_DIR) -> Path:
    return folder / f"specchat-{size}.png"


def render_pngs() -> list[Path]:
    """Render every PNG size from the SVG with Qt's SVG renderer, then copy SVG and PNGs into the package."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - QPainter wants one
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"Qt could not read {SVG}")
    PNG_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for size in PNG_SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        path = png_path(size)
        if not image.save(str(path), "PNG"):
            raise SystemExit(f"could not write {path}")
        written.append(path)
    sync_package_icons()
    return written


def sync_package_icons() -> None:
    """Copy the SVG and PNGs to app/data/icons/ (package data), replacing what was there."""
    PACKAGE_ICON_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SVG, PACKAGE_ICON_DIR / SVG.name)
    for size in PNG_SIZES:
        shutil.copyfile(png_path(size), png_path(size, PACKAGE_ICON_DIR))


def write_platform_icons(out_dir: Path) -> tuple[Path, Path]:
    """specchat.ico (Windows) and specchat.icns (macOS) from the committed PNGs; Pillow only, no Qt."""
    try:
        from PIL import Image
    except ImportError:
        raise SystemExit("Pillow is needed to make .ico/.icns files: pip install pillow") from None

    out_dir.mkdir(parents=True, exist_ok=True)
    images = {size: Image.open(png_path(size)).convert("RGBA") for size in PNG_SIZES}
    ico = out_dir / "specchat.ico"
    largest_ico = max(ICO_SIZES)
    # Each size from its own rendering, rather than Pillow scaling the largest down.
    images[largest_ico].save(
        ico,
        format="ICO",
        sizes=[(s, s) for s in ICO_SIZES],
        append_images=[images[s] for s in ICO_SIZES if s != largest_ico],
    )
    icns = out_dir / "specchat.icns"
    largest_icns = max(ICNS_SIZES)
    images[largest_icns].save(
        icns,
        format="ICNS",
        append_images=[images[s] for s in ICNS_SIZES if s != largest_icns],
    )
    return ico, icns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--platform",
        metavar="DIR",
        type=Path,
        help="write specchat.ico and specchat.icns into DIR from the committed PNGs",
    )
    args = parser.parse_args(argv)
    if args.platform:
        for path in write_platform_icons(args.platform):
            print(path)
        return 0
    for path in render_pngs():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
