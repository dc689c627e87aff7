"""Documents beyond the context: read, cut into passages, indexed (words and vectors) and retrieved with sources.
Plain Python, no Qt; the CLI (`specchat-cli index`, `generate --docs`) and the window drive it.

- formats.py: Reading a document's text (text, Markdown, code, HTML, PDF, DOCX), bounded, or one sentence why not.
- html_text.py: An HTML page's readable text with the standard library's parser, headings as Markdown headings.
- index.py: The index as the indexer and the search use it: documents by path, their passages and vectors.
- index_db.py: The index's own SQLite file: its tables, FTS5 over the passages, and why it is a file of its own.
- indexer.py: Building and refreshing an index, file by file: changed, added and removed files, progress, cancel.
- passages.py: Cutting a document into passages along its structure: headings, paragraphs, functions, pages.
- question.py: What documents add to one question: whole when they fit comfortably, else its passages numbered.
- records.py: The plain records: a document's text, passages, progress, notes, sources, and the Embedder protocol.
- retrieval.py: A question's passages within a token budget, numbered, the prompt block that cites them.
- search.py: Ranking passages by words (bm25) and by meaning (numpy cosine), fused by reciprocal rank.
- walk.py: Finding the documents a person names: folders walked with bounds, link loops walked once.
"""
