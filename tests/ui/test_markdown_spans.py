"""The Markdown reader keeps each visible character's provenance (no Qt needed)."""

from __future__ import annotations

from app.ui.markdown_spans import char_sources, parse_reply


def _sources(text: str, draft_spans: list[str]) -> list[str]:
    sources = ["target"] * len(text)
    for span in draft_spans:
        start = text.index(span)
        sources[start:start + len(span)] = ["draft"] * len(span)
    return sources


def test_markup_disappears_and_provenance_stays():
    text = "Use **bold** and `code`.\n\n```python\ndef f():\n    return 1\n```\n- item *one*"
    blocks = parse_reply(text, _sources(text, ["bold", "return 1", "one"]))
    assert [b.kind for b in blocks] == ["paragraph", "code", "bullet"]
    assert blocks[0].text == "Use bold and code."
    assert blocks[1].language == "python"
    assert blocks[1].text == "def f():\n    return 1"
    assert blocks[2].text == "item one"
    drafted = ["".join(r.text for r in b.runs if r.source == "draft") for b in blocks]
    assert drafted == ["bold", "return 1", "one"]
    styles = {r.text: r.style for r in blocks[0].runs}
    assert "bold" in styles["bold"] and "code" in styles["code"]


def test_unfinished_fence_of_a_stopped_reply_is_still_code():
    blocks = parse_reply("Start:\n```js\nlet x = 1")
    assert [b.kind for b in blocks] == ["paragraph", "code"]
    assert blocks[1].text == "let x = 1"


def test_unmatched_markers_stay_literal():
    blocks = parse_reply("2 * 3 * 4 and **not closed")
    assert blocks[0].text == "2 * 3 * 4 and **not closed"


def test_char_sources_pad_and_cut_to_the_text():
    assert char_sources([("ab", "draft"), ("c", "target")]) == ["draft", "draft", "target"]
    assert char_sources([("ab", "draft")], 3) == ["draft", "draft", "target"]
    assert char_sources([("abc", "draft")], 2) == ["draft", "draft"]
