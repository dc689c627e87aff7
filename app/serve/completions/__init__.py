"""The API's /v1/completions: raw text (or token ids) continued with no chat template, and fill-in-the-middle.

- requests.py: A /v1/completions body (a prompt, fill-in-the-middle's suffix, echo, logprobs as a number) read into what the engine runs.
- replies.py: One completion's records as OpenAI's text-completion shapes, streamed or whole.
"""
