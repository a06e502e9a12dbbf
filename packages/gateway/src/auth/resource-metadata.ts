import type express from 'express';
import { invalidOption } from '@tidemark/protocol';

/** The OAuth protected-resource document this gateway serves (RFC 9728). */
export interface ResourceMetadataOptions {
  /** This server's public MCP URL, e.g. `https://mcp.example.com/mcp`. */
  readonly resource: string;
  /** Issuers of the tokens it accepts. */
  readonly authorizationServers: readonly string[];
  /**
   * The scopes a client asks for when it signs in (`scopes_supported`; also a 401's `scope`):
   * those its tools need (`requiredScopes`), or the ones most callers should hold.
   */
  readonly scopesSupported?: readonly string[];
}

/** Serves RFC 9728 metadata when configured; returns its URL for `WWW-Authenticate`. */
export function serveResourceMetadata(
  app: express.Express,
  metadata: ResourceMetadataOptions | undefined,
): string | undefined {
  if (metadata === undefined) return undefined;
  let resource: URL;
  try {
    resource = new URL(metadata.resource);
  } catch {
    throw invalidOption('resourceMetadata.resource', 'an absolute URL', metadata.resource);
  }
  for (const scope of metadata.scopesSupported ?? [])
    if (!/^[\u0021\u0023-\u005B\u005D-\u007E]+$/.test(scope))
      throw invalidOption('resourceMetadata.scopesSupported', 'OAuth scope-tokens', scope);
  const document = {
    resource: metadata.resource,
    authorization_servers: metadata.authorizationServers,
    bearer_methods_supported: ['header'],
    ...(metadata.scopesSupported === undefined
      ? {}
      : { scopes_supported: metadata.scopesSupported }),
  };
  const suffix = resource.pathname === '/' ? '' : resource.pathname;
  const path = `/.well-known/oauth-protected-resource${suffix}`;
  app.get([path, '/.well-known/oauth-protected-resource'], (_req, res) => {
    res.json(document);
  });
  return `${resource.origin}${path}`;
}
