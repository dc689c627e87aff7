#!/usr/bin/env bash
# Package the bundle as a Debian package with dpkg-deb: `bash packaging/build_deb.sh` after packaging/build.py.
#
#   /opt/specchat/                        the bundle (dist/SpecChat)
#   /usr/bin/specchat                     a link to /opt/specchat/SpecChat
#   /usr/share/applications/specchat.desktop, /usr/share/icons/hicolor/*/apps/specchat.*
#
# No maintainer scripts: Debian's own dpkg triggers (desktop-file-utils, hicolor-icon-theme) refresh the menu and
# icon caches when these folders change. Users' chats, settings and models stay in their platformdirs folders, the
# same as a pip install's, and are not touched by installing or removing the package.
# Usage: build_deb.sh [BUNDLE_DIR] [OUT_DIR]  (defaults: dist/SpecChat, dist)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bundle="${1:-$root/dist/SpecChat}"
out="${2:-$root/dist}"
python="${PYTHON:-$root/.venv/bin/python}"
[ -x "$python" ] || python=python3

if [ ! -x "$bundle/SpecChat" ]; then
  echo "no bundle at $bundle: build it first with: $python packaging/build.py" >&2
  exit 1
fi
for tool in dpkg-deb dpkg; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian/Ubuntu)" >&2; exit 1; }
done

version="$(cd "$root" && "$python" -c 'import app; print(app.__version__)')"
arch="$(dpkg --print-architecture)"
# The newest glibc symbol version anything in the bundle asks for; the package needs at least that libc6.
glibc="$(find "$bundle" -type f \( -name '*.so*' -o -name SpecChat \) -exec objdump -T {} + 2>/dev/null \
  | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1 || true)"
glibc="${glibc:-$(ldd --version | head -n 1 | grep -o '[0-9.]*$')}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/specchat_${version}_${arch}"
mkdir -p "$pkg/DEBIAN" "$pkg/opt" "$pkg/usr/bin" "$pkg/usr/share/applications"
cp -a "$bundle" "$pkg/opt/specchat"
ln -s /opt/specchat/SpecChat "$pkg/usr/bin/specchat"

# The same entry and icons as `specchat-cli desktop install`, written system-wide.
(cd "$root" && "$python" - "$pkg/usr/share" <<'EOF'
import sys
from pathlib import Path

from app import desktop_entry

share = Path(sys.argv[1])
(share / "applications" / desktop_entry.DESKTOP_FILE).write_text(desktop_entry.desktop_entry_text(["specchat"]))
files = desktop_entry.DesktopFiles(share)
for size in desktop_entry.ICON_SIZES:
    files.png(size).parent.mkdir(parents=True, exist_ok=True)
    files.png(size).write_bytes(desktop_entry.icon_png(size).read_bytes())
files.svg.parent.mkdir(parents=True, exist_ok=True)
files.svg.write_bytes(desktop_entry.icon_svg().read_bytes())
EOF
)

installed_kib="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
cat > "$pkg/DEBIAN/control" <<EOF
Package: specchat
Version: $version
Architecture: $arch
Maintainer: SpecChat developers <specchat@localhost>
Installed-Size: $installed_kib
Depends: libc6 (>= $glibc), libgl1, libegl1, libxcb1
Recommends: libwayland-client0, libwayland-cursor0, libwayland-egl1
Section: utils
Priority: optional
Description: chat with local GGUF models, sped up by speculative decoding
 SpecChat is a desktop chat app for local GGUF language models. A small draft
 model proposes tokens, the target model verifies them in one batch, and the
 window highlights the tokens the target accepted. Self-contained: Python,
 Qt and llama.cpp are included under /opt/specchat.
EOF

mkdir -p "$out"
deb="$out/specchat_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$pkg" "$deb" >/dev/null
echo "built $deb ($(du -h "$deb" | cut -f1), installs $((installed_kib / 1024)) MiB)"
