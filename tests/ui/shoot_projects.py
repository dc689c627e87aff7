"""Screenshots of projects and their documents, for the user guide and a look at their layout:
python tests/ui/shoot_projects.py OUT_DIR [WIDTHxHEIGHT ...]. In each theme (light, dark), THEME in the names:
- documents-indexing-THEME.png: the window while the project's folder is indexed (the documents line above the
  composer, with its progress and Cancel);
- projects-chat-list-THEME.png: the window at 800x600 (and at each size named, as projects-chat-list-THEME-SIZE.png)
  with three projects, loose chats, a reply citing its sources [1] [2], and the documents line once indexing ended;
- project-settings-THEME.png: the project's settings dialog with its documents;
- source-dialog-THEME.png: the source dialog its [1] opens, the passage highlighted;
- settings-documents-THEME.png: Settings > Documents with the embedding model chosen.
Projects and chats are written straight into a fresh profile's store, and a folder of Markdown notes beside it. The
notes are indexed for real, with all-minilm-l6-v2-f16.gguf from $SPECCHAT_TEST_MODELS or
~/.cache/specchat-test-models when it is there (else by their words alone); the reply's sources are the passages the
window finds for its question, and no chat model is loaded. Offscreen Qt by default; QT_QPA_PLATFORM=xcb under Xvfb
shows the same window on a real X server."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from app.engine.events import GenerationStats  # noqa: E402
from app.store import AppSettings, ChatStore, save_settings  # noqa: E402
from app.ui.projects.dialogs import ProjectSettingsDialog  # noqa: E402
from app.ui.settings.dialog import AppSettingsDialog  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402

EMBEDDING = "all-minilm-l6-v2-f16.gguf"
QUESTION = "When should I prune my roses, and what soil do they like?"
REPLY = (
    "Prune roses in late winter or early spring, when the buds begin to swell [1]. They like deep, loamy soil "
    "that drains well, with plenty of compost worked in [2]."
)

# A small gardening notebook: more text than half a 2,048-token context holds, so a question gets passages.
NOTES = {
    "roses.md": {
        "Pruning roses": "Prune roses in late winter or early spring, when the buds begin to swell and the worst "
        "frosts are over. Cut just above an outward-facing bud, at a slant, and take out dead, damaged and "
        "crossing stems first. Climbers are pruned after they flower.",
        "Soil for roses": "Roses like deep, loamy soil that drains well but holds some moisture. Work plenty of "
        "compost or well-rotted manure in before planting, and mulch each spring. They dislike standing water "
        "and very sandy soil.",
        "Feeding": "Feed roses in spring as the leaves open and again after the first flush of flowers. Stop "
        "feeding in late summer so that new growth can harden before winter.",
        "Black spot": "Black spot shows as dark patches on the leaves, which then yellow and fall. Pick up the "
        "fallen leaves, water the soil rather than the leaves, and give the plants room for air to move.",
    },
    "tomatoes.md": {
        "Sowing tomatoes": "Sow tomato seeds indoors six to eight weeks before the last frost, a few millimetres "
        "deep, in a warm place. Pot them on when they have their first true leaves.",
        "Planting out": "Plant tomatoes out when the nights stay above ten degrees. Set them deeper than they "
        "grew in the pot: the buried stem grows roots. Give each plant a stake or a string to climb.",
        "Watering tomatoes": "Water tomatoes deeply and regularly at the base. Uneven watering splits the fruit "
        "and causes blossom end rot, a dark sunken patch at the bottom of the fruit.",
        "Side shoots": "Pinch out the side shoots that grow between the main stem and the leaves of cordon "
        "tomatoes, so the plant puts its strength into the fruit. Bush tomatoes are left to sprawl.",
    },
    "compost.md": {
        "Making compost": "Mix green material, such as grass cuttings and vegetable peelings, with brown "
        "material, such as dry leaves, straw and torn cardboard, in about equal parts. Turn the heap every few "
        "weeks to let air in.",
        "When compost is ready": "Compost is ready when it is dark, crumbly and smells of earth, usually after "
        "six months to a year. Anything not yet broken down goes back on the next heap.",
        "What to leave out": "Leave out meat, fish, dairy, diseased plants and the roots of perennial weeds. "
        "Cooked food draws rats, and weed roots survive a cool heap.",
    },
    "watering.md": {
        "When to water": "Water early in the morning, so the leaves dry during the day and less is lost to the "
        "sun. Evening watering keeps slugs happy and leaves wet overnight.",
        "How much": "A good soaking once or twice a week is better than a sprinkle every day: it sends roots "
        "down where the soil stays moist. Push a finger into the soil; water when it is dry at the first joint.",
        "Mulch": "A layer of mulch five centimetres deep keeps the soil moist, keeps weeds down and feeds the "
        "soil as it rots. Keep it a hand's width away from stems.",
    },
}


def _settle(app: QApplication, seconds: float, until: Callable[[], bool] = lambda: False) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        app.processEvents()
        time.sleep(0.01)


def _write_notes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, sections in NOTES.items():
        text = "\n\n".join(f"## {heading}\n\n{body}" for heading, body in sections.items())
        (folder / name).write_text(f"# {Path(name).stem.title()}\n\n{text}\n", encoding="utf-8")
    return folder


def _fill(store: ChatStore, notes: Path) -> tuple[int, int]:
    """The projects and chats; (the Garden project's id, the chat the reply goes in)."""
    garden = store.projects.create_project("Garden", instructions="You answer about plants.")
    store.projects.update_project(dataclasses.replace(garden, documents=(str(notes),)))
    thesis = store.projects.create_project("Thesis: speculative decoding on small CPUs")
    store.projects.create_project("Empty project")
    last = 0
    for title, project in (
        ("Soil for tomatoes", garden.id),
        ("Related work, acceptance rates", thesis.id),
        ("A loose chat about nothing in particular", None),
        ("Write add()", None),
        ("Pruning roses", garden.id),
    ):
        chat = store.create_chat(title)
        if title != "Pruning roses":
            store.add_message(chat.id, "user", title)
        if project is not None:
            store.projects.move_chat(chat.id, project)
        last = chat.id
    return garden.id, last


def _embedding_model() -> str:
    folder = Path(os.environ.get("SPECCHAT_TEST_MODELS") or Path.home() / ".cache" / "specchat-test-models")
    path = folder / EMBEDDING
    if path.is_file():
        return str(path)
    print(f"{EMBEDDING} is not in {folder}: the notes are indexed by their words alone", file=sys.stderr)
    return ""


def _save(widget: QWidget, path: Path) -> None:
    widget.grab().save(str(path))
    print(path)


def _index_and_shoot(app: QApplication, window: MainWindow, project_id: int, out: Path, theme: str) -> None:
    """Index the notes from scratch, saving the window while the third file is read; every text the documents line
    shows is printed with its height, to see whether it jumps."""
    documents = window.documents
    for suffix in ("", "-wal", "-shm"):
        Path(f"{documents.index_path}{suffix}").unlink(missing_ok=True)
    project = window.store.projects.get_project(project_id)
    assert project is not None
    documents.documents_changed(project_id, project.documents)
    bar, seen, shot = documents.bar, [], False
    end = time.monotonic() + 120
    while documents.busy() and time.monotonic() < end:
        app.processEvents()
        words = bar.progress.text() if bar.progress.isVisible() else bar.label.text()
        line = f"{words} | bar {bar.bar.value()}/{bar.bar.maximum()} | height {bar.height()}"
        if not seen or seen[-1] != line:
            seen.append(line)
        if not shot and bar.bar.value() >= 2:
            _save(window, out / f"documents-indexing-{theme}.png")
            shot = True
        time.sleep(0.005)
    _settle(app, 0.5)
    print("\n".join(seen))
    print(f"{bar.label.text()} | height {bar.height()}")


def main() -> None:
    out = Path(sys.argv[1])
    sizes = ["800x600", *sys.argv[2:]]
    notes = _write_notes(Path(os.environ["SPECCHAT_HOME"]) / "Garden notes")
    embedding = _embedding_model()
    store = ChatStore()
    project_id, chat_id = _fill(store, notes)
    # A small context, so the notes do not fit whole and the question is sent with passages.
    save_settings(
        AppSettings(
            scan_hf_cache=False, last_chat_id=chat_id, threads=1, context_size=2048, documents_embedding=embedding
        )
    )
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(800, 600)
    window.show()
    _settle(app, 60, until=lambda: not window.documents.busy())
    sources = window.documents.sources_for(QUESTION, 512)
    print("sources:", [(s.number, Path(s.path).name, s.heading) for s in sources])
    store.add_message(chat_id, "user", QUESTION, sources=sources)
    stats = GenerationStats(tokens=38, elapsed_s=1.2, tokens_per_second=31.7)
    reply = store.add_message(chat_id, "assistant", REPLY, stats=stats)
    window.open_chat(chat_id)
    project = store.projects.get_project(project_id)
    assert project is not None
    for theme in ("dark", "light"):  # a bare QApplication is styled by the switch, which skips the current one
        window.appearance.set_choice(theme)
    for theme in ("light", "dark"):
        window.appearance.set_choice(theme)
        window.resize(800, 600)
        _settle(app, 0.5)
        _index_and_shoot(app, window, project_id, out, theme)
        for size in sizes:
            width, height = (int(n) for n in size.split("x"))
            window.resize(width, height)
            _settle(app, 1)
            name = f"projects-chat-list-{theme}" + ("" if size == sizes[0] else f"-{size}")
            _save(window, out / f"{name}.png")
        window.resize(800, 600)
        dialog = ProjectSettingsDialog(project, [], ["Concise"], window)
        dialog.show()
        _settle(app, 0.5)
        _save(dialog, out / f"project-settings-{theme}.png")
        dialog.close()
        source = window.documents.show_source(reply.id, 1)
        assert source is not None
        _settle(app, 0.5)
        _save(source, out / f"source-dialog-{theme}.png")
        source.close()
        settings = AppSettingsDialog(window.settings, window, embedding_models=[embedding] if embedding else [])
        settings.pages.show_page("Documents")
        settings.show()
        _settle(app, 0.5)
        _save(settings, out / f"settings-documents-{theme}.png")
        settings.close()
    window.shutdown()


if __name__ == "__main__":
    main()
