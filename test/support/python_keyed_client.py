"""The official Python MCP SDK client sending idempotency keys, as the README shows.

Usage: python_keyed_client.py <url> <key>
At protocol 2026-07-28 it calls `pay` twice with the key in the call's `_meta`, then once with
other arguments under the same key. Prints one JSON object: the two charge ids and the third
call's error, or {"error": message}.
"""

import json
import sys

import anyio
from mcp.client import Client
from mcp.shared.exceptions import MCPError


async def main(url: str, key: str) -> None:
    meta = {"io.tidemark/idempotency-key": key}
    async with Client(url) as client:
        first = await client.call_tool("pay", {"to": "ada@example.com", "amountCents": 5}, meta=meta)
        again = await client.call_tool("pay", {"to": "ada@example.com", "amountCents": 5}, meta=meta)
        try:
            await client.call_tool("pay", {"to": "ada@example.com", "amountCents": 6}, meta=meta)
            refused = None
        except MCPError as error:
            refused = {"code": error.code, "reason": (error.data or {}).get("reason")}
        print(
            json.dumps(
                {
                    "protocolVersion": client.protocol_version,
                    "first": first.structured_content["chargeId"],
                    "again": again.structured_content["chargeId"],
                    "refused": refused,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], sys.argv[2])
    except Exception as error:  # noqa: BLE001 - reported to the test as JSON
        print(json.dumps({"error": repr(error)}), flush=True)
        sys.exit(1)
