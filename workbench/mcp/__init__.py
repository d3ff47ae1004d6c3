"""A bench's tools served over MCP (issue 45): `gem-workbench mcp GEM` (stdio, or streamable
HTTP with `--http PORT`) and `bench.serve_mcp()` in a notebook.

tools.py    the listing: each tool as the assistant sees it on its platform
results.py  a CallResult as an MCP tool result (errors: isError with code, message, details)
server.py   the SDK's low-level server over one Bench: every tools/call is `bench.call`
stdio.py    the stdio transport (the protocol owns the real stdout; nothing else reaches it)
http.py     streamable HTTP on 127.0.0.1: a token, Origin/Host checks, bounded requests
serving.py  `bench.serve_mcp()`: HTTP in a background thread, stopped with the bench

The MCP SDK (`mcp`) is imported only here, when serving: `import workbench`, `check` and `open`
never load it.
"""
