"""MCP tools in the window: the servers of the chosen mcp.json, a reply's calls asked about and shown in the
transcript, and the Settings page. The loop's rules are app.replies.tool_loop's, shared with `generate --mcp`.

- call_blocks.py: A reply's tool calls in the transcript: the permission prompt before a call runs, and the call's block after.
- servers.py: The window's tool servers: the mcp.json chosen in Settings, its servers kept connected on the ToolHost's thread.
- tool_turns.py: The window's side of the tool loop: a reply's calls asked about, run, stored and sent back, until the model answers.
- tools_page.py: Settings > Tools: the mcp.json, each server's state and tools, and which tools the open chat offers.
- window_tools.py: The window's tools, wired in one place (servers, the loop, the Settings page).
"""
