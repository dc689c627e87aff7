"""The Markdown reader maps every shown character to its character in the source (no Qt needed)."""

from __future__ import annotations

from app.ui.transcript.markdown.blocks import NO_SOURCE, parse_markdown


def _shown(text: str):
    """(kind, shown text, the source characters it maps to) per block, table cells as their own entries."""
    out = []
    for block in parse_markdown(text):
        for inline in [block.inline, *(cell for row in block.rows for cell in row)]:
            if inline.text:
                mapped = "".join(text[o] if o != NO_SOURCE else "?" for o in inline.offsets)
                out.append((block.kind, inline.text, mapped))
    return out


def test_shown_characters_map_to_themselves_past_markup():
    text = "Use **bold** and `code`.\n\n```python\ndef f():\n    return 1\n```\n- item *one*"
    shown = _shown(text)
    assert [(kind, shown_text) for kind, shown_text, _ in shown] == [
        ("paragraph", "Use bold and code."),
        ("code", "def f():\n    return 1"),
        ("paragraph", "item one"),
    ]
    assert all(shown_text == mapped for _, shown_text, mapped in shown)


def test_a_link_tail_is_skipped_even_when_its_url_holds_the_next_letters():
    text = "[go](http://y.org/(y)) y"
    (block,) = parse_markdown(text)
    assert block.inline.text == "go y"
    assert block.inline.offsets[-1] == len(text) - 1  # the last "y", not the one in the URL
    assert block.inline.styles[0].href == "http://y.org/(y)" and not block.inline.styles[-1].href


def test_an_entity_is_one_character_mapped_to_the_start_of_its_span():
    text = "a &amp; b &lt;c&gt;"
    (block,) = parse_markdown(text)
    assert block.inline.text == "a & b <c>"
    assert block.inline.offsets[2] == text.index("&amp;")
    assert block.inline.offsets[6] == text.index("&lt;")


def test_task_items_show_a_checkbox_and_their_text_maps_past_it():
    text = "- [x] x marks\n- [ ] open"
    blocks = parse_markdown(text)
    assert [(b.marker, b.inline.text) for b in blocks] == [("☑", "x marks"), ("☐", "open")]
    assert blocks[0].inline.offsets[0] == text.index("x marks")


def test_a_table_keeps_its_cells_and_skips_the_separator_row():
    text = "| a | b |\n|---|--:|\n| -1 | 2 |"
    (table,) = parse_markdown(text)
    assert [[cell.text for cell in row] for row in table.rows] == [["a", "b"], ["-1", "2"]]
    assert table.header_rows == 1 and table.aligns == ["", "right"]
    assert table.rows[1][0].offsets[0] == text.index("-1")


def test_an_unfinished_fence_of_a_stopped_reply_is_still_code():
    blocks = parse_markdown("Start:\n```js\nlet x = 1")
    assert [b.kind for b in blocks] == ["paragraph", "code"]
    assert blocks[1].inline.text == "let x = 1" and blocks[1].language == "js"


def test_unmatched_markers_and_raw_html_stay_literal():
    (block,) = parse_markdown("2 * 3 * 4 and **not closed <b>x</b>")
    assert block.inline.text == "2 * 3 * 4 and **not closed <b>x</b>"


def test_carriage_returns_map_back_to_the_original_offsets():
    text = "one\r\ntwo **b**"
    (block,) = parse_markdown(text)
    assert block.inline.text == "one\ntwo b"
    assert block.inline.offsets[-1] == text.index("b")
