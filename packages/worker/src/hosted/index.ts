/**
 * MCP servers in any language hosted by a worker (issue #60): a stdio server's processes
 * (`ChildPool`) and the tool module that serves their tools (`hostedServerModule`).
 */
export { hostedServerModule } from './hosted-server.js';
export { hostedServerSpecs } from './hosted-spec.js';
export type { HostedServerModule } from './hosted-server.js';
export type { HostedServerSpec } from './child-pool.js';
