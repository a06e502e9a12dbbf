"""The official Python MCP SDK's OAuth client (`mcp.client.auth`), unmodified, signing in to Tidemark.

Usage:
  oauth_client.py <mcp-url> <redirect-url>

Signs in (discovery, dynamic registration, PKCE, a token for the resource), calls `whoami` twice,
then `write` (which needs a scope the token lacks), waits for the token to expire and calls
`whoami` again (the client refreshes). The browser is played here: it follows the authorization
server's redirects, keeping its cookies, up to the redirect back to the client.

Prints JSON lines: {"whoami": {...}} per call, {"refused": message}, {"client_id": id},
{"tokens": n} (tokens the client was given), or {"error": message}.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.given = 0

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.given += 1

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """Follows the authorization URL to the redirect back to the client, keeping cookies."""

    def __init__(self, redirect: str) -> None:
        self.redirect = redirect
        self.url: str | None = None

    async def open(self, url: str) -> None:
        self.url = url

    async def back(self) -> AuthorizationCodeResult:
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            url = self.url
            for _ in range(10):
                response = await http.get(url)
                location = response.headers.get("location")
                if location is None:
                    raise RuntimeError(f"{response.status_code} at {url}: {response.text}")
                url = str(httpx2.URL(url).join(location))
                if url.startswith(self.redirect):
                    params = httpx2.URL(url).params
                    return AuthorizationCodeResult(
                        code=params["code"], state=params.get("state"), iss=params.get("iss")
                    )
        raise RuntimeError("too many redirects")


def text_of(result) -> str:
    return next(block.text for block in result.content if block.type == "text")


async def main(url: str, redirect: str) -> None:
    storage = MemoryStorage()
    browser = Browser(redirect)
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="tidemark-python-oauth",
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.back,
    )
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            for _ in range(2):
                emit({"whoami": json.loads(text_of(await client.call_tool("whoami", {})))})
            try:
                written = await client.call_tool("write", {})
                emit({"written": text_of(written)})
            except Exception as error:  # noqa: BLE001 - a JSON-RPC error: the refusal
                emit({"refused": str(error)})
            emit({"client_id": storage.client.client_id if storage.client else None})
            expires_in = storage.tokens.expires_in if storage.tokens else 0
            await anyio.sleep((expires_in or 0) + 1)
            emit({"whoami": json.loads(text_of(await client.call_tool("whoami", {})))})
            emit({"tokens": storage.given})


if __name__ == "__main__":
    try:
        anyio.run(main, *sys.argv[1:])
    except Exception as error:  # noqa: BLE001 - the test reads what went wrong
        emit({"error": repr(error)})
        sys.exit(1)
