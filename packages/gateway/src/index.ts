export { GATEWAY_DEFAULTS, LEGACY_PROTOCOL_VERSIONS, createGateway } from './gateway.js';
export type { AuthResult, Gateway, GatewayOptions } from './gateway.js';
