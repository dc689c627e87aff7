"""BadRequest: a request the server will not run, with the one sentence sent back."""

from __future__ import annotations


class BadRequest(ValueError):
    """A request the server will not run; `str()` is the one sentence sent back with `status`."""

    def __init__(self, message: str, status: int = 400, code: str = ""):
        super().__init__(message)
        self.status = status
        self.code = code  # the engine's reason, where it gave one (app.serve.jobs.JobFailed.code)


# What a client hears when a bug of ours ends its request; the log has the details.
OUR_FAULT = "The server failed while answering this request; its log has the details."
