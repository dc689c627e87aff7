"""Tools from MCP servers (the Model Context Protocol), for the model to call. Plain Python, no Qt.

- servers_file.py: The `mcp.json` list of servers (Claude Desktop's, Cursor's and LM Studio's format), read with a
  sentence for every entry that cannot be used.
- process_group.py: A stdio server's whole process tree, ended when the server ends (the SDK leaves a child behind).
- records.py: A server's state, its tools and a call's result, as frozen records.
- server_log.py: What the SDK logs about a server, rate-limited to a few lines and counts, and its stderr, bounded.
- tool_host.py: The servers, connected on a thread of their own through the official `mcp` SDK: their tools, and
  calls that time out, can be stopped, and never return more than a person can read.

The `mcp` package is imported only inside tool_host.py's thread, so listing servers costs nothing until one runs.
"""
