"""The pieces the Get-models panel shows: a card per curated pair, the search results, a repo's files by quant."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from app.engine.gguf.mmproj import mmproj_beside
from app.hub.client import RepoListing, RepoSummary
from app.hub.curated import CuratedPair
from app.hub.download_plan import downloaded_file, format_bytes
from app.hub.repo_files import RemoteModel
from app.hub.repo_projector import projector_for
from app.ui.widgets.eye_icon import SIZE as EYE_SIZE, eye_icon

MODEL_ROLE = Qt.ItemDataRole.UserRole + 1
REPO_ROLE = Qt.ItemDataRole.UserRole + 2


class PairCard(QFrame):
    """One curated pair: what it is, how big, what it is good at, and its Download button. GUI thread only."""

    sig_download = Signal(str)
    """The user asked to download this pair: its pair_id."""
    sig_load = Signal(str, str)
    """The pair is downloaded already and the user asked to load it: the target's path and the draft's ("" for
    none)."""

    def __init__(self, pair: CuratedPair, parent=None):
        super().__init__(parent)
        self.pair = pair
        self.setObjectName("PairCard")
        layout = QHBoxLayout(self)
        text = QVBoxLayout()
        title_row = QHBoxLayout()
        title = QLabel(f"<b>{pair.title}</b>")
        title_row.addWidget(title)
        # The library's and the picker's eye: this pair comes with its projector and can see pictures.
        self.eye = QLabel()
        self.eye.setPixmap(eye_icon().pixmap(EYE_SIZE, EYE_SIZE))
        self.eye.setToolTip(
            f"Sees pictures: comes with its projector, {pair.projector.item.name}" if pair.projector is not None else ""
        )
        self.eye.setAccessibleName("Sees pictures")
        self.eye.setVisible(pair.projector is not None)
        title_row.addWidget(self.eye)
        title_row.addStretch(1)
        text.addLayout(title_row)
        self.sizes = sizes = QLabel(
            f"about {format_bytes(pair.approx_size)} — {pair.target.label} {format_bytes(pair.target.approx_size)}"
            + (
                f" + draft {pair.draft.label} {format_bytes(pair.draft.approx_size)}"
                if pair.draft is not None
                else " (no draft model: it speculates from n-grams)"
                if pair.kind == "chat"
                else ""
            )
            + (f" + picture projector {format_bytes(pair.projector.approx_size)}" if pair.projector is not None else "")
        )
        sizes.setObjectName("Muted")
        sizes.setWordWrap(True)
        text.addWidget(sizes)
        good_at = QLabel(pair.good_at + (" Needs a Hugging Face token." if pair.needs_token else ""))
        good_at.setWordWrap(True)
        text.addWidget(good_at)
        layout.addLayout(text, 1)
        self.button = QPushButton("Download pair" if pair.draft is not None else "Download")
        self.button.setObjectName("PrimaryButton")
        self.button.setToolTip("\n".join(f"{f.repo_id}/{f.filename}" for f in pair.files))
        self.button.clicked.connect(self._clicked)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.downloaded: list[Path] = []  # the pair's files in the models folder, when every one is there
        self.found: list[Optional[Path]] = []  # each file of the pair where it is already, None where not

    def mark_downloaded(self, dest_dir: Path, library_files: Optional[Mapping[str, Path]] = None) -> None:
        """Offer Load instead of Download when every file of the pair is here already: in `dest_dir`, or among
        the library's scanned files (`library_files`, by file name); where only some are, offer the rest."""
        known = library_files or {}
        self.found = [downloaded_file(dest_dir, f.item.name) or known.get(f.item.name) for f in self.pair.files]
        self.downloaded = [p for p in self.found if p is not None] if all(self.found) else []
        with_draft = self.pair.draft is not None
        self.button.setEnabled(not (self.downloaded and self.pair.kind != "chat"))
        if self.downloaded and self.pair.kind != "chat":  # no chat model: nothing to load in a chat
            self.button.setText("Downloaded")
            self.button.setToolTip(f"Downloaded: {self.downloaded[0]}\nDocument search and serve --embedding use it.")
        elif self.downloaded:
            self.button.setText("Load pair" if with_draft else "Load")
            self.button.setToolTip("Downloaded: " + ", ".join(str(p) for p in self.downloaded))
        elif any(self.found):
            missing = [f for f, p in zip(self.pair.files, self.found) if p is None]
            only = missing[0] if len(missing) == 1 else None
            self.button.setText(
                "Download draft"
                if only is not None and only is self.pair.draft
                else "Download projector"
                if only is not None and only is self.pair.projector
                else "Download the rest"
            )
            self.button.setToolTip(
                "Here already: "
                + ", ".join(str(p) for p in self.found if p is not None)
                + "\nTo download: "
                + ", ".join(f"{f.repo_id}/{f.filename}" for f in missing)
            )
        else:
            self.button.setText("Download pair" if with_draft else "Download")
            self.button.setToolTip("\n".join(f"{f.repo_id}/{f.filename}" for f in self.pair.files))

    def target_and_draft(self) -> tuple[str, str]:
        """The downloaded target's path and the draft's ("" for none): what is loaded. The projector is not among
        them: the engine finds it beside the target."""
        paths = [str(p) for p in self.downloaded]
        return paths[0], paths[1] if self.pair.draft is not None else ""

    def _clicked(self) -> None:
        if self.downloaded:
            self.sig_load.emit(*self.target_and_draft())
        else:
            self.sig_download.emit(self.pair.pair_id)


def fill_results(widget: QListWidget, results: list[RepoSummary]) -> None:
    widget.clear()
    for result in results:
        facts = [f"{_count(result.downloads)} downloads"]
        if result.likes:
            facts.append(f"{_count(result.likes)} likes")
        if result.gated:
            facts.append("gated: needs a token")
        item = QListWidgetItem(f"{result.repo_id}    ·  " + " · ".join(facts))
        item.setData(REPO_ROLE, result.repo_id)
        widget.addItem(item)


def local_copy(model: RemoteModel, dest_dir: Path) -> Optional[Path]:
    """The model's first file in `dest_dir` when every part of it is there already (of the Hub's sizes)."""
    found = [downloaded_file(dest_dir, f.path.rsplit("/", 1)[-1], f.size) for f in model.files]
    return found[0] if found and all(found) else None


def lacks_projector(listing: RepoListing, model: RemoteModel, local: Optional[Path]) -> bool:
    """A model here already whose repository has a projector, but none lies beside it: downloading it again
    fetches only the projector (the job skips the files in place)."""
    return local is not None and projector_for(listing, model) is not None and mmproj_beside(local) is None


def download_action(
    listing: Optional[RepoListing], model: Optional[RemoteModel], dest_dir: Path
) -> tuple[str, Optional[Path]]:
    """What the Download button does for the chosen model: ("Load", its file) when it is here already, else
    ("Download projector", None) when it is here without the projector its repository offers, else ("Download",
    None)."""
    local = local_copy(model, dest_dir) if model is not None else None
    if model is None or local is None:
        return "Download", None
    if listing is not None and lacks_projector(listing, model, local):
        return "Download projector", None
    return "Load", local


def fill_files(tree: QTreeWidget, listing: RepoListing, dest_dir: Optional[Path] = None) -> None:
    """Quantization groups as top rows (with their size), each model under its group; a model already in
    `dest_dir` says "Downloaded". Projectors are no rows of their own: each model's row says one comes with it."""
    tree.clear()
    for group in listing.model_groups:
        label = group.quant or "other"
        size = format_bytes(group.size) if group.size is not None else ""
        if len(group.models) == 1:
            tree.addTopLevelItem(_model_item(listing, group.models[0], label, dest_dir))
            continue
        top = QTreeWidgetItem([label, size, f"{len(group.models)} files"])
        top.setFlags(top.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        tree.addTopLevelItem(top)
        for model in group.models:
            top.addChild(_model_item(listing, model, "", dest_dir))
        top.setExpanded(True)
    for column in range(tree.columnCount()):
        tree.resizeColumnToContents(column)


def _model_item(
    listing: RepoListing, model: RemoteModel, quant_label: str, dest_dir: Optional[Path]
) -> QTreeWidgetItem:
    size = format_bytes(model.size) if model.size is not None else "?"
    name = model.name
    if model.is_split:
        name += f"  ({len(model.files)} parts)" + ("" if model.complete else ", some parts missing")
    projector = projector_for(listing, model)
    if projector is not None:
        name += "  + picture projector" + (f" {format_bytes(projector.size)}" if projector.size is not None else "")
    local = local_copy(model, dest_dir) if dest_dir is not None else None
    if local is not None:
        name += "  · Downloaded" + (", without its projector" if lacks_projector(listing, model, local) else "")
    item = QTreeWidgetItem([quant_label, size, name])
    item.setData(0, MODEL_ROLE, model)
    item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if projector is not None:  # the pair cards' and the library's eye: this model can see pictures
        item.setIcon(2, eye_icon())
        item.setToolTip(2, f"Sees pictures: comes with its projector, {projector.name}")
    return item


def selected_model(tree: QTreeWidget) -> Optional[RemoteModel]:
    item = tree.currentItem()
    return item.data(0, MODEL_ROLE) if item is not None else None


def _count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)
