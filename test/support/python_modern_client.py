"""The official Python MCP SDK client at protocol 2026-07-28 against a Tidemark gateway.

Usage: python_modern_client.py <url>
The client probes `server/discover` and adopts 2026-07-28 (the stateless lane: no initialize, a
self-contained POST per request), lists the tools, calls `count` with progress, and calls
`confirm_deploy`, whose multi-round-trip input request it answers through its elicitation callback.
Prints one JSON object with what it saw, or {"error": message}.
"""

import json
import sys

import anyio
from mcp import types
from mcp.client import Client


async def main(url: str) -> None:
    asked: list[str] = []

    async def on_elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    progress: list[int] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(int(value))

    async with Client(url, elicitation_callback=on_elicit) as client:
        tools = await client.list_tools()
        counted = await client.call_tool("count", {"to": 5, "delayMs": 20}, progress_callback=on_progress)
        deployed = await client.call_tool("confirm_deploy", {"env": "staging"})
        print(
            json.dumps(
                {
                    "protocolVersion": client.protocol_version,
                    "tools": sorted(tool.name for tool in tools.tools),
                    "count": counted.content[0].text,
                    "progress": progress,
                    "asked": asked,
                    "deploy": deployed.content[0].text,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1])
    except Exception as error:  # noqa: BLE001 - the test reads what went wrong
        print(json.dumps({"error": repr(error)}), flush=True)
        sys.exit(1)
