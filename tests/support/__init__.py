"""Test-only helpers: the tiny pair's engine, damaged model files, acceptance measurement, child processes and leaked threads.

- engines.py: the local engine with the tiny synthetic pair loaded.
- acceptance.py: how often a draft's greedy pick equals the target's (llama_cpp's high-level API).
- processes.py: `specchat-cli` run as a child (run_cli, cli_command); Ctrl-C sent to one, with a deadline, the child never left behind.
- threads.py: the SpecChat threads a test left running, each given a deadline to end.
- old_schema.py: A chat database taken back to an older schema version, to test its migration.
- ports.py: a free TCP port on 127.0.0.1, for a test's server.
- mcp_files.py: mcp.json files that list the test tool server, for the window's tests.
- contrast.py: WCAG contrast between two colours, for the tests that check text stays readable.
- real_embedding.py: all-MiniLM-L6-v2 converted from its PyPI wheel into a BERT GGUF for the real-model tier (runnable).
- malformed_models.py: Damaged GGUF files, each broken in one way that makes llama.cpp refuse it or abort, for tests of the refusals.
"""
