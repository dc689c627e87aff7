"""A conversation: the sidebar of chats, the composer, sending and streaming replies, and the per-reply actions.

- chat_format_choice.py: A model file without a chat template: one sentence and the choice of raw completion, a built-in template or a file.
- chat_header.py: The open chat's header: its model and speculation, and the question before a chat's model replaces the loaded one.
- chat_list.py: The sidebar: the chats, newest first, under their projects, with search, new, rename and delete. GUI thread only.
- chat_tree.py: The chat list's item model: project headers, each over its chats, then the chats in no project, newest first.
- chat_list_controller.py: Keeps the sidebar's chat list in step with the store: one row per change, and searches off the GUI thread.
- chat_prompt.py: What the engine reads of a stored chat: its current branch (app.store.branches), and its session there. No Qt.
- compare_plain.py: Compare with plain: a finished reply's request run again in the background without speculation.
- composer.py: The composer: where the user writes. Enter sends, Shift+Enter starts a new line; the button turns into Stop.
- conversation.py: The conversation controller: sends requests to the engine process, streams replies into the transcript and
- chat_exporter.py: The window's "Export chat…": a chat written as Markdown or as JSON with every token and round (app.replies.export), to a
- reply_display.py: What the transcript shows of the open chat's replies: start, flushed tokens, end, and the notices about them.
- reply_request.py: One reply being generated, as the conversation gathers it: what was asked (a ReplyRequestSpec), and the tokens
- reply_saver.py: Saves replies on a thread of its own, so that storing a long reply never holds up the window.
- settings_binding.py: Chat-settings plumbing: the open chat's settings (or a new chat's, until its first message stores it), their
- speculate_anyway.py: Speculate anyway: where the speculation controller pauses the draft because it does not pay on this machine,
"""
