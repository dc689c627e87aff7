"""What is made of a finished reply: its stats in words, Compare with plain, the inspector's numbers and export. No Qt.

- comparison.py: Compare with plain: a finished reply run again without speculation, and what the two runs say side by side.
- drafter_words.py: The one table of what a person reads for each drafter: its label, its name in a sentence, what it does.
- export.py: A chat as a file: Markdown to read, or JSON with every message's tokens and rounds, for people who study draft
- project_file.py: A project as one file (`.specchat-project.json`): its settings and its chats, exported and imported.
- inspector_data.py: The numbers of the per-reply inspector, from a reply's recorded rounds (no Qt, no engine).
- status_words.py: What speculation is doing, in words, from the typed round records: the status line, the offer, the stats row.
- tool_loop.py: The model-calls-a-tool loop the window and `generate --mcp` share: what follows a reply's calls, and what the model is sent.
- reply_json.py: A finished reply as `specchat-cli generate` reports it: the --json document and the statistics line.
- stats.py: A reply's stats and models in words, as the transcript and an exported chat both write them (no Qt).
"""
