"""One reply in the transcript: its characters with their origins, written into the document whole or as it streams,
and its Thinking section.

- chars.py: Each character of a reply: the origin and round of the token it belongs to, and where refused proposals go.
- streaming_reply.py: The reply streaming now, at the transcript's end: its frame, its Thinking section and its answer as Markdown.
- thinking_section.py: A reply's Thinking section: its reasoning above the answer, folded to one line once the answer starts.
- writer.py: Writes replies into the transcript's QTextDocument as Markdown, each shown character with its token's origin.
"""
