"""Tool calls in replies: which format a model writes, and reading its calls out of the text, whole or streamed.

- calls.py: A tool call as the reply holds it, which call format a chat template teaches its model, and its markers.
- parsers.py: Splitting a reply's text into what it says and the tool calls it makes, one family of call formats at a time.
- stream.py: A streamed reply's text as content pieces and whole tool calls, in the order a client should see them.
"""
