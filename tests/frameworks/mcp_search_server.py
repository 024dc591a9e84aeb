"""A tiny MCP server over stdio (the `mcp` SDK's own server), for the MCP toolset tests."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("search")


@server.tool()
def search(q: str) -> str:
    """Search the docs."""
    return f"found {q}"


if __name__ == "__main__":
    server.run()
