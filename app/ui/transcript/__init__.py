"""The transcript: the document replies stream into, with provenance highlights, Markdown, tooltips and links. GUI thread only.

- browser.py: The transcript's QTextBrowser behaviours: it fetches nothing, copies what the reader sees (ghost text left
- chat_pages.py: Which messages of the open chat the transcript shows: the newest page at once, older pages on scrolling up.
- chat_view.py: The transcript: a QTextBrowser that streams tokens with their provenance and renders finished replies.
- frames.py: The transcript's frames: a message's (a user's as a bubble), a notice's, and the author line above a message.
- format.py: What the transcript shows of one message (its record and stats row) and the char-format properties that mark
- links/: links in the transcript: the app's own (Copy, Retry...), which reply text cannot forge, and a reply's, opened only
  after confirming.
- long_text.py: Bounded layout, so that no reply freezes the window.
- markdown/: a reply's Markdown: parsed as blocks of shown characters that keep their source offsets, code colours,
  and a streaming reply written block by block.
- marks.py: Walks over the transcript's document by character format: the highlight shown or hidden, refused proposals
- message_meta.py: The line beside a message's author: when it was written, its length, and the switcher between its versions.
- message_actions.py: The links under a message (Copy, Edit, Regenerate, Continue, Compare with plain), its stats row, which opens the
- picture_thumbnails.py: The pictures of a user's message in the transcript: a thumbnail each, under its text.
- reply/: one reply: its characters with their origins, written whole or as it streams, and its Thinking section.
- source_links.py: A reply's [1], [2] as links to its sources, and the line under it naming each document and passage.
- token_tooltip.py: What hovering a token says: who wrote it and, when its round is known, what was proposed, what the target
- welcome.py: What an empty transcript says: how to start, and what the two highlights mean. GUI thread only.
"""
