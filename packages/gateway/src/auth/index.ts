/**
 * auth/ — who is asking, before anything is read or logged. `Authenticate` is the one shape of an
 * authenticator; `jwtAuthenticator` (a JWKS) and `tokenFileAuthenticator` are the two shipped;
 * `Access` owns the decision for each request (authenticated, exempt share, or refused — with the
 * per-address budget that turns repeated failures into 429); `serveResourceMetadata` serves the
 * RFC 9728 document a client signs in from.
 */
export { Access, callerOf, isExemptShare } from './access.js';
export type { Asker } from './access.js';
export type { AuthResult, Authenticate } from './authenticate.js';
export { bearerToken, jwtAuthenticator, tokenFileAuthenticator } from './authenticators.js';
export type { JwtAuthenticatorOptions, TokenFileOptions } from './authenticators.js';
export { serveResourceMetadata } from './resource-metadata.js';
export type { ResourceMetadataOptions } from './resource-metadata.js';
