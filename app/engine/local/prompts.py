"""One loaded target's prompts: its chat template (ChatML once the model's own failed) with the request's template
variables (a thinking model's enable_thinking and reasoning_effort), the last turn's tokens reused for the next, and
per-message token counts for fitting long chats.

A Prompts lives as long as its target is loaded; it is called from the engine process's main thread only.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.errors import PromptFormatError
from app.engine.local.chat_format import CHATML, RenderedPrompt, prepare_template, raw_prompt, render_prompt
from app.engine.local.llama_model import LoadedModel
from app.engine.local.prompt_tokens import tokenize_prompt
from app.engine.tools.calls import ToolFormat, format_of

# The per-message token counts kept for fitting long chats (about 1,000 chats' worth of recent messages).
CONTENT_TOKENS_CACHED = 20000
# The most of a prompt that does not continue the last request (a regenerated reply, another chat) kept for the
# history drafter: its end, where the user's new message is; the rest was kept when it was written.
PROMPT_TAIL_CHARS = 4000
# The transcripts kept for going back to a conversation (another chat, another API client): its tokens as generated
# are what the kept KV states hold (app.engine.local.kv_states.conversation_cache), where re-tokenising could split differently.
TRANSCRIPTS_KEPT = 32
# What a chat template adds around one message (<|im_start|>role\n ... <|im_end|>\n in ChatML): an estimate, the
# exact count of the fitted prompt checks it.
MESSAGE_MARKUP_TOKENS = 6
# The template variables the app itself sets; a request's template_kwargs cannot replace them.
RESERVED_VARIABLES = frozenset({"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"})


class Prompts:
    """Renders and tokenizes prompts for one target. Use from the engine process's main thread only."""

    def __init__(self, target: LoadedModel):
        self.target = target
        self._chat_template: Optional[str] = target.metadata("tokenizer.chat_template")
        self._template_fallback = ""  # the notice of a chat template that failed, once it has
        # Why the model's own chat template could not be used for the last prompt ("" when it could): the chat was
        # formatted as ChatML instead, which a front end should tell the user.
        self.template_notice = ""
        # The exact text and tokens of the last request plus its reply: the next turn of the same conversation
        # extends this text, so its tokens are reused instead of re-tokenising (which could split differently
        # and force the whole conversation to be evaluated again).
        self.transcript_text = ""
        self.transcript_tokens: list[int] = []
        self._transcripts: dict[str, list[int]] = {}  # recent conversations' text -> tokens, oldest first
        self.tool_format: ToolFormat = format_of(self._chat_template)
        self._content_tokens: dict[str, int] = {}  # message text -> its token count, oldest entry first
        # Work every first prompt needs, done while loading rather than while the user waits for a reply.
        prepare_template(self._chat_template)
        target.control_tokens()

    def render(
        self, messages: Sequence[dict], tools: Sequence[dict] = (), config: Optional[GenerationConfig] = None
    ) -> RenderedPrompt:
        """The chat prompt of `messages` (with `tools` offered, OpenAI's shape), with the spans of the template's
        own markup. `config` may choose another format (raw completion, or a template the person picked for a
        model file that has none) and sets the template's thinking variables. Raises PromptFormatError for
        template_kwargs that are not a JSON object."""
        target = self.target
        bos = target.token_text(target.bos_id) if target.bos_id >= 0 else ""
        eos = target.token_text(target.eos_id) if target.eos_id >= 0 else ""
        chosen = config.chat_format if config is not None else "model"
        if chosen == "raw":
            return raw_prompt(messages)
        variables = template_variables(config)
        if chosen == "template" and config is not None:
            return render_prompt(
                config.chat_template or CHATML, messages, bos_token=bos, eos_token=eos, tools=tools, variables=variables
            )
        rendered = render_prompt(
            self._chat_template, messages, bos_token=bos, eos_token=eos, tools=tools, variables=variables
        )
        if rendered.notice and not rendered.refused_conversation:
            # A template that failed once is not run again for this model: each try could cost its whole budget,
            # and its reason may differ from try to try, which would read as news. One that refused this
            # conversation (its raise_exception) is tried again on the next: one request (an API client's, say)
            # must not change how every other chat is formatted.
            self._chat_template, self._template_fallback = None, rendered.notice
        self.template_notice = rendered.notice if rendered.refused_conversation else self._template_fallback
        text, markup = rendered.text, rendered.markup
        if target.add_bos and bos and text.startswith(bos):
            # tokenize() adds BOS itself; a second one would confuse the model
            cut = len(bos)
            text = text[cut:]
            markup = tuple((max(0, a - cut), b - cut) for a, b in markup if b > cut)
        return RenderedPrompt(text, markup, rendered.notice, opens_thinking=rendered.opens_thinking)

    def tokens_for(self, text: str, markup: Optional[Sequence[tuple[int, int]]] = None) -> list[int]:
        """Tokens for a prompt. With `markup` (a chat prompt) only those spans may hold control tokens; without
        (raw text for `complete`) every literal control token in the text counts."""
        target = self.target
        known, known_tokens = self._transcript_of(text)
        reuse = bool(known_tokens)
        if markup is not None:
            start = len(known) if reuse else 0
            tail = tokenize_prompt(target, text, markup, start=start, add_bos=not reuse)
            return known_tokens + tail if reuse else tail
        if reuse:
            return known_tokens + target.tokenize(text[len(known) :], add_special=False)
        return target.tokenize(text, add_special=True)

    def _transcript_of(self, text: str) -> tuple[str, list[int]]:
        """The longest kept transcript `text` goes on from, and its tokens (("", []) when none)."""
        if self.transcript_tokens and text.startswith(self.transcript_text):
            return self.transcript_text, self.transcript_tokens
        best = max((known for known in self._transcripts if text.startswith(known)), key=len, default="")
        return (best, self._transcripts[best]) if best else ("", [])

    def count_tokens(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> int:
        """The prompt's tokens as `config` renders it: with its tools' schema and in its format (None: the model's
        own template, no tools)."""
        tools = json.loads(config.tools) if config is not None and config.tools else ()
        rendered = self.render(messages, tools, config)
        return len(self.tokens_for(rendered.text, rendered.markup))

    def message_tokens(self, message: dict) -> int:
        """About how many prompt tokens one message takes: its text's tokens (counted once, then cached) and a
        few for the template's markup around it."""
        content = str(message.get("content", ""))
        n = self._content_tokens.get(content)
        if n is None:
            n = len(self.target.tokenize(content, add_special=False, parse_special=False))
            if len(self._content_tokens) >= CONTENT_TOKENS_CACHED:
                self._content_tokens.pop(next(iter(self._content_tokens)))
            self._content_tokens[content] = n
        return n + MESSAGE_MARKUP_TOKENS

    def new_text(self, text: str) -> str:
        """What of a request's text the history drafter has not seen: past the last request and its reply when it
        goes on from them, else its end."""
        if self.transcript_text and text.startswith(self.transcript_text):
            return text[len(self.transcript_text) :]
        return text[-PROMPT_TAIL_CHARS:]

    def remember(self, text: str, tokens: list[int]) -> None:
        """A request's text plus its reply, and their tokens: what the next turn reuses."""
        self.transcript_text = text
        self.transcript_tokens = tokens
        self._transcripts.pop(text, None)
        self._transcripts[text] = tokens
        if len(self._transcripts) > TRANSCRIPTS_KEPT:
            self._transcripts.pop(next(iter(self._transcripts)))


def template_variables(config: Optional[GenerationConfig]) -> dict:
    """The template variables a request sets: its `template_kwargs` (a JSON object's text), then `enable_thinking`
    (when the request says on or off) and `reasoning_effort` (when it names one) over them. Raises
    PromptFormatError, with a sentence a person can act on, when template_kwargs is not a JSON object."""
    if config is None:
        return {}
    variables: dict = {}
    if config.template_kwargs.strip():
        try:
            parsed = json.loads(config.template_kwargs)
        except ValueError as exc:
            raise PromptFormatError(f"The template variables (template_kwargs) are not valid JSON: {exc}.") from None
        if not isinstance(parsed, dict):
            raise PromptFormatError(
                "The template variables (template_kwargs) must be a JSON object, such as "
                f'{{"enable_thinking": false}}; got {type(parsed).__name__}.'
            )
        reserved = sorted(RESERVED_VARIABLES & parsed.keys())
        if reserved:
            raise PromptFormatError(
                f"The template variables (template_kwargs) may not set {', '.join(reserved)}: "
                "SpecChat sets those itself."
            )
        variables.update(parsed)
    if config.thinking is not None:
        variables["enable_thinking"] = config.thinking
    if config.reasoning_effort:
        variables["reasoning_effort"] = config.reasoning_effort
    return variables
