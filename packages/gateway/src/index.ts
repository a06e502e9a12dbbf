export { createGateway } from './gateway.js';
export type { Gateway } from './gateway.js';
export { GATEWAY_DEFAULTS } from './gateway-options.js';
export type { GatewayOptions, ResumeObservation } from './gateway-options.js';
export { bearerToken, jwtAuthenticator, tokenFileAuthenticator } from './auth/authenticators.js';
export type { Authenticate, AuthResult } from './authenticate.js';
export type { JwtAuthenticatorOptions, TokenFileOptions } from './auth/authenticators.js';
export type { JSONWebKeySet } from 'jose';
