"""Where the models answer the API's jobs: an engine process apart from the HTTP side. Plain Python, no Qt.

- client.py: `specchat-cli serve`'s handle on its engine process: jobs in, answers out, restarted after a crash.
- flights.py: API jobs sent to an engine process, kept by request id: relayed answers, stops, and one error each on a death.
"""
