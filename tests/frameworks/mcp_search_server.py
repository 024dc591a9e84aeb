"""A tiny MCP server over stdio (the `mcp` SDK's own server), for the MCP toolset tests."""

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("search")


@server.tool()
def search(q: str) -> str:
    """Search the docs."""
    return f"found {q}"


class Address(BaseModel):
    street: str
    zip: int


@server.tool()
def ship(to: Address) -> str:
    """Ship to an address: a nested model, which pydantic-ai does not check."""
    return f"shipped to {to.street}"


if __name__ == "__main__":
    server.run()
