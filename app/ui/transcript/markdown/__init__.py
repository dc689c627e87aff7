"""A reply's Markdown: parsed into blocks whose shown characters keep their source offsets, and code coloured.

- blocks.py: A reply's Markdown, parsed by markdown-it-py, as blocks of shown characters that each know their source offset.
- code_colors.py: Syntax colours of code blocks from Pygments: a foreground colour per character (plain Python, no Qt).
"""
