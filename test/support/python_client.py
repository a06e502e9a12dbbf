"""The official Python MCP SDK client against a Tidemark gateway, for the interop tests.

Usage: python_client.py <url> <to> <delay_ms>
Prints JSON lines: {"initialized": true}, one {"progress": n} per progress notification, then
{"result": text} or {"error": message}.
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


async def main(url: str, to: int, delay_ms: int) -> None:
    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            emit({"initialized": True})

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                emit({"progress": int(progress)})

            result = await session.call_tool("count", {"to": to, "delayMs": delay_ms}, progress_callback=on_progress)
            emit({"result": result.content[0].text})


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    except Exception as error:  # noqa: BLE001 - the test reads what went wrong
        emit({"error": repr(error)})
        sys.exit(1)
