"""MCP over stdio acting for the user of $MEMPALACE_TOKEN in
$MEMPALACE_WORKSPACE (docs/tenancy.md): a team member reads the team's
drawers and is refused writes. Usage: tenancy_stdio.py BIN --palace DIR | --store URL"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def check(condition, what, detail=""):
    if not condition:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok {what}", flush=True)


async def main():
    binary, palace = sys.argv[1], sys.argv[2:]
    env = {key: os.environ[key] for key in ("HOME", "PATH", "MEMPALACE_TOKEN", "MEMPALACE_WORKSPACE",
                                              "MEMPALACE_MODEL_DIR", "MEMPALACE_EMBEDDER") if key in os.environ}
    params = StdioServerParameters(command=binary, args=palace + ["mcp", "serve", "--no-workers"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("mempalace_search", {"query": "Orion launch code", "limit": 3})
            check(not found.is_error and "4721" in found.content[0].text, "the member reads over stdio",
                  found.content[0].text[:300])
            refused = await session.call_tool("mempalace_add_drawer",
                                              {"wing": "launch", "room": "orion", "content": "stdio bob was here"})
            text = refused.content[0].text
            check(refused.is_error and "access denied" in text, "the member cannot write over stdio", text)
            status = await session.call_tool("mempalace_status", {})
            check(not status.is_error and json.loads(status.content[0].text)["total_drawers"] == 1,
                  "status counts the team workspace", status.content[0].text[:300])
    print("PASS", flush=True)


asyncio.run(main())
