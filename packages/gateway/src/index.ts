export { GATEWAY_DEFAULTS, LEGACY_PROTOCOL_VERSIONS, createGateway } from './gateway.js';
export type { Gateway, GatewayOptions } from './gateway.js';
export { bearerToken, jwtAuthenticator, tokenFileAuthenticator } from './auth/authenticators.js';
export type { Authenticate, AuthResult, JwtAuthenticatorOptions } from './auth/authenticators.js';
export type { JSONWebKeySet } from 'jose';
