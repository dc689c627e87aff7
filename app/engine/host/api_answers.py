"""An API client's request answered by the engine, as wire records: one copy for every place the API runs.

`answer_api` runs on the thread that owns the engine: the engine process of `specchat-cli serve` or of the window
(the worker loop sends its records over the pipe to the HTTP side, in the parent), and the tests' engine threads
(app.serve.jobs.run_job hands them to the request's sink). It yields ReplyStarted or ReplyFailed, then the engine's
own events, and nothing more once the client is gone. Nothing a request does raises out of it: every exception (a template's, the engine's, a bug of ours) becomes
a ReplyFailed, with status 400 when the request asked for what cannot be done, else 500.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Iterator, Optional, Union

from app.engine.errors import EngineError, GrammarError, PromptFormatError, PromptTooLongError
from app.engine.events import EngineEvent, FinishedEvent, WaitingEvent
from app.engine.host.stops import AnyOf
from app.engine.host.wire import (
    CONTEXT_LENGTH_EXCEEDED,
    AnswerChat,
    AnswerCompletion,
    LoadModels,
    ReplyFailed,
    ReplyStarted,
)
from app.engine.protocol import CancelSignal, ChatEngine

NO_MODEL = "No model is loaded; load one in SpecChat (or start `specchat-cli serve --target MODEL.gguf`)."
# Tests only: a chat request whose text holds this variable's value, or a load of a target whose path does, makes
# the engine process abort(), as a llama.cpp crash would. Without the variable nothing can reach it.
CRASH_ENV = "SPECCHAT_TEST_ENGINE_ABORT_ON"

ApiAnswer = Union[ReplyStarted, ReplyFailed, EngineEvent]


def answer_api(
    engine: Optional[ChatEngine], request: AnswerChat | AnswerCompletion, gone: CancelSignal, enough: CancelSignal
) -> Iterator[ApiAnswer]:
    """Answer `request` with `engine`. `gone`: the client went away (nothing more is yielded); `enough`: it has what
    it wants (generation stops, and its FinishedEvent still comes)."""
    request_id = request.request_id
    try:
        if gone.is_set():
            return
        if engine is None or engine.loaded_target is None:
            yield ReplyFailed(request_id, NO_MODEL, status=503)
            return
        if isinstance(request, AnswerCompletion):
            tokens = engine.completion_tokens(request.prompt, request.suffix)
            prompt_tokens, what = len(tokens), "prompt"
        else:
            messages = list(request.messages)
            if len(messages) > engine.n_ctx:  # every message takes a token at least: no need to format them
                yield ReplyFailed(
                    request_id,
                    f"The request holds {len(messages)} messages; the loaded context of "
                    f"{engine.n_ctx} tokens cannot hold that many.",
                    status=400,
                    code=CONTEXT_LENGTH_EXCEEDED,
                )
                return
            # Counted as the reply renders it, the tools' schema included: the prompt holds it too.
            prompt_tokens, what = engine.count_tokens(messages, request.config), "messages"
            if request.count_only:  # counted by the template and tokenizer alone: no decoding, no KV cache
                yield ReplyStarted(request_id, engine.loaded_target, prompt_tokens, engine.tool_format)
                return
        if prompt_tokens >= engine.n_ctx:
            yield ReplyFailed(
                request_id,
                f"The {what} take {prompt_tokens} tokens; the loaded context holds {engine.n_ctx}.",
                status=400,
                code=CONTEXT_LENGTH_EXCEEDED,
            )
            return
        # Asked before ReplyStarted: what an engine refuses when asked (a server's model and logprobs) is a 400
        # with its status line, streamed or not.
        cancel = AnyOf(gone, enough)
        if isinstance(request, AnswerCompletion):
            events = engine.complete(tokens, request.config, cancel=cancel, request_id=request_id)
        else:
            events = engine.chat(messages, request.config, cancel=cancel, request_id=request_id)
        yield ReplyStarted(request_id, engine.loaded_target, prompt_tokens, engine.tool_format)
        for event in events:
            if gone.is_set():
                return
            if enough.is_set() and not isinstance(event, (FinishedEvent, WaitingEvent)):
                # Past the stop string: nobody reads it (its FinishedEvent is marked where it is read). A batch
                # reply's WaitingEvent still goes on: the loop that drives the batch steps it only once every
                # reply waits, so swallowing it held every reply of the batch, this one's end included.
                continue
            yield event
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except PromptTooLongError as exc:
        yield ReplyFailed(
            request_id,
            f"The messages take {exc.n_prompt} tokens; the loaded context holds {exc.n_ctx}.",
            status=400,
            code=CONTEXT_LENGTH_EXCEEDED,
        )
    except (PromptFormatError, GrammarError) as exc:
        yield ReplyFailed(request_id, str(exc), status=400)
    except EngineError as exc:
        yield ReplyFailed(request_id, str(exc), status=500)
    except BaseException as exc:  # a bug of ours, or a template's own exception: it ends this request only
        traceback.print_exc()
        sys.stderr.flush()
        yield ReplyFailed(
            request_id,
            f"The server failed while answering this request ({type(exc).__name__}); its log has the details.",
            status=500,
        )


def abort_if_asked(request: object) -> None:
    """The tests' crash (CRASH_ENV): abort() this process when the variable is set and the request holds its
    value (a chat message's text, or the path of the target to load)."""
    word = os.environ.get(CRASH_ENV)
    if not word:
        return
    if isinstance(request, AnswerChat):
        texts = [str(message.get("content", "")) for message in request.messages if isinstance(message, dict)]
    elif isinstance(request, LoadModels):
        texts = [str(request.target)]
    else:
        return
    if any(word in text for text in texts):
        os.abort()
