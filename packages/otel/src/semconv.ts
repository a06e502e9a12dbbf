// Semantic-convention attribute names Tidemark uses. The MCP, JSON-RPC, gen_ai and messaging ones
// are incubating upstream, so they are copied here rather than imported (as OpenTelemetry advises).
export const ATTR_MCP_METHOD_NAME = 'mcp.method.name';
export const ATTR_MCP_SESSION_ID = 'mcp.session.id';
export const ATTR_JSONRPC_REQUEST_ID = 'jsonrpc.request.id';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_URL_FULL = 'url.full';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_TIDEMARK_STEP = 'tidemark.step';
export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id';
export const ATTR_MESSAGING_KAFKA_OFFSET = 'messaging.kafka.offset';

// Tidemark's own.
export const ATTR_TIDEMARK_GENERATION = 'tidemark.generation';
export const ATTR_TIDEMARK_ATTEMPT = 'tidemark.attempt';
export const ATTR_TIDEMARK_RESUME_OUTCOME = 'tidemark.resume.outcome';
export const ATTR_TIDEMARK_RESUME_REASON = 'tidemark.resume.reason';
export const ATTR_TIDEMARK_CLAIM_GENERATION = 'tidemark.resume.claim_generation';
export const ATTR_TIDEMARK_STREAM = 'tidemark.stream';
