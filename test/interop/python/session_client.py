"""The official Python MCP SDK (`mcp` on PyPI), unmodified, as the interop suite's session client.

Usage:
  session_client.py handshake <url> <mode>        mode: auto | legacy | 2026-07-28
  session_client.py call <url> <tool> <json-args> <mode>   mode: default | legacy | 2026-07-28
  session_client.py input <url>

Prints JSON lines: {"negotiated": v} and {"tools": [...]}; one {"progress": n} per notification;
{"asked": message} per elicitation; then {"result": text, "isError": bool} or {"error": message}.
Everything else is the client's default (mode "auto": it probes server/discover first).
"""

import json
import sys

import anyio
from mcp import types
from mcp.client import Client


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


async def on_elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    emit({"asked": params.message})
    return types.ElicitResult(action="accept", content={"confirm": True})


async def on_progress(value: float, total: float | None, message: str | None) -> None:
    emit({"progress": int(value)})


def emit_result(result: types.CallToolResult) -> None:
    text = next((block.text for block in result.content if block.type == "text"), None)
    emit({"result": text, "isError": bool(result.is_error)})


async def main(mode: str, url: str, *rest: str) -> None:
    if mode == "handshake":
        async with Client(url, mode=rest[0]) as client:
            emit({"negotiated": client.protocol_version})
            emit({"tools": [tool.name for tool in (await client.list_tools()).tools]})
    elif mode == "call":
        async with Client(url, mode="auto" if rest[2] == "default" else rest[2]) as client:
            emit_result(await client.call_tool(rest[0], json.loads(rest[1]), progress_callback=on_progress))
    elif mode == "input":
        async with Client(url, elicitation_callback=on_elicit) as client:
            emit_result(await client.call_tool("confirm_deploy", {"env": "staging"}))
    else:
        raise ValueError(f"unknown mode {mode}")


if __name__ == "__main__":
    try:
        anyio.run(main, *sys.argv[1:])
    except Exception as error:  # noqa: BLE001 - the test reads what went wrong
        emit({"error": repr(error)})
        sys.exit(1)
