export { createGateway } from './gateway.js';
export type { Gateway } from './gateway.js';
export { GATEWAY_DEFAULTS } from './gateway-options.js';
export type { GatewayOptions, ResumeObservation } from './gateway-options.js';
export { bearerToken, jwtAuthenticator, tokenFileAuthenticator } from './auth/index.js';
export type { Authenticate, AuthResult } from './auth/index.js';
export type { JwtAuthenticatorOptions, TokenFileOptions } from './auth/index.js';
export type { JSONWebKeySet } from 'jose';
