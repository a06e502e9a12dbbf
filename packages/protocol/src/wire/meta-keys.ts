/**
 * The `_meta` keys of the MCP 2026-07-28 envelope and its extensions that Tidemark reads or
 * writes: one table, so a key is spelled once.
 */
export const MetaKeys = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  /** A `subscriptions/listen`'s id on each notification it sends. */
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;
