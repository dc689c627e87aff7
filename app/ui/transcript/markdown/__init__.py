"""A reply's Markdown: parsed into blocks whose shown characters keep their source offsets, code coloured, and a
streaming reply written block by block as it arrives.

- blocks.py: A reply's Markdown, parsed by markdown-it-py, as blocks of shown characters that each know their source offset.
- maths.py: Maths in a reply as Unicode text (α, ∑, √, x²) by pylatexenc (plain Python, no Qt).
- code_colors.py: Syntax colours of code blocks from Pygments: a foreground colour per character (plain Python, no Qt).
- streaming.py: The reply streaming now, written as Markdown while it arrives: only its last, unfinished block is written again.
"""
