import type express from 'express';
import { invalidOption } from '@tidemark/protocol';
import type { GatewayOptions } from '../gateway-options.js';

export /** Serves RFC 9728 metadata when configured; returns its URL for `WWW-Authenticate`. */
function serveResourceMetadata(
  app: express.Express,
  metadata: GatewayOptions['resourceMetadata'],
): string | undefined {
  if (metadata === undefined) return undefined;
  let resource: URL;
  try {
    resource = new URL(metadata.resource);
  } catch {
    throw invalidOption('resourceMetadata.resource', 'an absolute URL', metadata.resource);
  }
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
