"""FastMCP 4's client with its Tasks extension (`fastmcp-tasks` on PyPI), unmodified, as the
interop suite's task client.

Usage:
  tasks_client.py handshake <url>
  tasks_client.py task <url>            count to 5 as a task, driven to its result
  tasks_client.py input <url>           confirm_deploy as a task; the elicitation accepted
  tasks_client.py cancel <url>          a long count as a task, cancelled
  tasks_client.py start <url>           a long count as a task, left running: prints its id
  tasks_client.py resume <url> <id>     drives that task to its result (from another endpoint)

Prints JSON lines: {"negotiated"}, {"tasks": bool}, {"created": status}, {"asked": message},
then {"result": text, "status": final} or {"error": message}.
"""

import json
import sys
from types import SimpleNamespace

import anyio
import fastmcp_tasks  # noqa: F401 - importing it is what turns on the client's task support
from fastmcp import Client
from fastmcp_tasks import call_tool_task
from mcp.types import ElicitResult


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


async def on_elicit(message, response_type, params, context):
    emit({"asked": message})
    return ElicitResult(action="accept", content={"confirm": True})


async def run(url: str, tool: str, arguments: dict) -> None:
    async with Client(url, elicitation_handler=on_elicit) as client:
        task = await call_tool_task(client, tool, arguments)
        emit({"created": task.create_result.status})
        result = await task.result()
        emit({"result": result.content[0].text, "status": (await task.status()).status})


async def main(mode: str, url: str, *rest: str) -> None:
    if mode == "handshake":
        async with Client(url) as client:
            emit({"negotiated": client.session.protocol_version})
            extensions = client.session.server_capabilities.extensions or {}
            emit({"tasks": "io.modelcontextprotocol/tasks" in extensions})
    elif mode == "task":
        await run(url, "count", {"to": 5, "delayMs": 50})
    elif mode == "input":
        await run(url, "confirm_deploy", {"env": "staging"})
    elif mode == "cancel":
        async with Client(url) as client:
            task = await call_tool_task(client, "count", {"to": 100, "delayMs": 100})
            emit({"created": task.create_result.status})
            await task.cancel()
            emit({"result": None, "status": (await task.wait()).status})
    elif mode == "start":
        async with Client(url) as client:
            task = await call_tool_task(client, "count", {"to": 30, "delayMs": 100})
            emit({"created": task.create_result.status, "taskId": task.task_id})
    elif mode == "resume":
        async with Client(url) as client:
            # The handle needs only the id: what a client that restarted would have kept.
            task = fastmcp_tasks.ToolTask(client, "count", SimpleNamespace(task_id=rest[0]))
            result = await task.result()
            emit({"result": result.content[0].text, "status": (await task.status()).status})
    else:
        raise ValueError(f"unknown mode {mode}")


if __name__ == "__main__":
    try:
        anyio.run(main, *sys.argv[1:])
    except Exception as error:  # noqa: BLE001 - the test reads what went wrong
        emit({"error": repr(error)})
        sys.exit(1)
