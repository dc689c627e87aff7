"""Tool calls in replies: which format a model writes, and reading its calls out of the text, whole or streamed.

- calls.py: A tool call as the reply holds it, which call format a chat template teaches its model, and its markers.
- bodies.py: A call block's body read into calls (JSON, Qwen3-Coder's XML, Mistral's forms), or as far as it is written.
- parsers.py: Splitting a reply's text into what it says and the tool calls it makes, one family of call formats at a time.
- stream.py: A streamed reply's text as content pieces and tool calls (started, argument pieces, ended or refused), in order.
"""
