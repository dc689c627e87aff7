"""Passages follow the document's structure (headings, functions, pages), stay within their length, and their
offsets find their text in the document."""

from __future__ import annotations

from app.documents.formats import document_from_bytes, read_document
from app.documents.html_text import html_to_text
from app.documents.passages import MAX_CHARS, split_passages
from app.documents.records import DocumentText
from tests.support.documents import pdf_bytes, write_docx


def check_offsets(document, passages):
    for passage in passages:
        assert document.text[passage.start : passage.end] == passage.text
        assert 0 < len(passage.text) <= MAX_CHARS


def test_markdown_passages_keep_their_headings_and_fences():
    text = (
        "# Guide\n\nIntro.\n\n## Install\n\nRun the installer.\n\n```sh\nmake\n\nmake install\n```\n\n"
        "## Use\n\n" + "Long paragraph words. " * 200 + "\n"
    )
    document = DocumentText("guide.md", "markdown", text)
    passages = split_passages(document)
    check_offsets(document, passages)
    install = next(p for p in passages if "installer" in p.text)
    assert install.heading == "Guide > Install" and "make install\n```" in install.text  # the fence is whole
    assert all(p.heading == "Guide > Use" for p in passages if "Long paragraph" in p.text)
    assert sum("Long paragraph" in p.text for p in passages) >= 3  # 4,400 characters cut in pieces


def test_python_is_cut_by_top_level_function_and_class():
    text = "import os\n\nLIMIT = 3\n\n\n@decorated\ndef first():\n    return 1\n\n\nclass Second:\n    x = 1\n"
    document = DocumentText("m.py", "code", text)
    passages = split_passages(document)
    check_offsets(document, passages)
    assert [p.heading for p in passages] == ["", "def first", "class Second"]
    assert passages[1].text.startswith("@decorated")


def test_other_code_is_cut_at_top_level_lines():
    text = "fn one() {\n    1\n}\n\nfn two() {\n    2\n}\n"
    passages = split_passages(DocumentText("m.rs", "code", text))
    assert [p.heading for p in passages] == ["fn one() {", "fn two() {"]


def test_pdf_passages_know_their_page():
    document = document_from_bytes("p.pdf", "pdf", pdf_bytes(["Alpha on page one.", "Beta on page two."]))
    passages = split_passages(document)
    check_offsets(document, passages)
    assert [(p.page, p.text) for p in passages] == [(1, "Alpha on page one."), (2, "Beta on page two.")]


def test_html_and_docx_headings_become_passages_headings(tmp_path):
    html = (
        "<html><head><style>p{}</style></head><body><h1>Title</h1><p>One  two</p><script>x()</script>"
        "<h2>Part</h2><p>Three</p></body></html>"
    )
    assert html_to_text(html) == "# Title\n\nOne two\n\n## Part\n\nThree\n"
    path = write_docx(tmp_path / "d.docx", [("h1", "Report"), ("p", "Summary here."), ("h2", "Costs"), ("p", "Ten.")])
    document, _ = read_document(str(path))
    passages = split_passages(document)
    check_offsets(document, passages)
    assert [(p.heading, p.text.splitlines()[-1]) for p in passages] == [
        ("Report", "Summary here."),
        ("Report > Costs", "Ten."),
    ]
