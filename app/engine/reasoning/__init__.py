"""Thinking models: telling a reply's reasoning from its answer, over the token stream as it arrives. No loaded
model and no llama.cpp: the local engine and a server's client both run their replies' events through it.

- markers.py: Which markers open and close the thinking (the chat template says), and where a reply starts.
- splitter.py: The stream splitter: each token's text to the reasoning or the answer, markers matched across tokens.
- share.py: How speculation did on the thinking and on the answer, by drafter, and what the answer copied.
"""
