// The fixture the official MCP conformance suite (@modelcontextprotocol/conformance) calls:
// tools, resources and prompts with the names and contents its server scenarios check. It runs
// on Tidemark like any tool module, so the suite exercises the gateway, the log and the worker.
import { fromJsonSchema, type McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { PNG, registerResourcesAndPrompts } from './conformance-content.js';

/** A minimal WAV, as the suite expects it. */
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

type Content = Record<string, unknown> & { type: string };

const text = (value: string): Content => ({ type: 'text', text: value });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const result = (...content: Content[]) =>
  ({ content }) as { content: Array<{ type: 'text'; text: string }> };

/** Tools whose answer is fixed content. */
const FIXED_TOOLS: Record<string, { description: string; content: Content[] }> = {
  test_simple_text: {
    description: 'Simple text content',
    content: [text('This is a simple text response for testing.')],
  },
  test_image_content: {
    description: 'Image content',
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
  },
  test_audio_content: {
    description: 'Audio content',
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
  },
  test_embedded_resource: {
    description: 'Embedded resource content',
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  },
  test_multiple_content_types: {
    description: 'Text, image and resource content together',
    content: [
      text('Multiple content types test:'),
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  },
};

/** Elicitation requests of the elicitation scenarios, by tool. */
const ELICITATIONS: Record<
  string,
  { message?: string; schema: Record<string, unknown>; prefix: string }
> = {
  test_elicitation: {
    schema: {
      type: 'object',
      properties: { response: { type: 'string', description: "User's response" } },
      required: ['response'],
    },
    prefix: 'User response',
  },
  test_elicitation_sep1034_defaults: {
    message: 'Please review and update the form fields with defaults',
    schema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: {
          type: 'string',
          description: 'User status',
          enum: ['active', 'inactive', 'pending'],
          default: 'active',
        },
        verified: { type: 'boolean', description: 'Verification status', default: true },
      },
      required: [],
    },
    prefix: 'Elicitation completed',
  },
  test_elicitation_sep1330_enums: {
    message: 'Please select options from the enum fields',
    schema: {
      type: 'object',
      properties: {
        untitledSingle: {
          type: 'string',
          description: 'Select one option',
          enum: ['option1', 'option2', 'option3'],
        },
        titledSingle: {
          type: 'string',
          description: 'Select one option with titles',
          oneOf: [1, 2, 3].map((i) => ({
            const: `value${i}`,
            title: `${['First', 'Second', 'Third'][i - 1]} Option`,
          })),
        },
        legacyEnum: {
          type: 'string',
          description: 'Select one option (legacy)',
          enum: ['opt1', 'opt2', 'opt3'],
          enumNames: ['Option One', 'Option Two', 'Option Three'],
        },
        untitledMulti: {
          type: 'array',
          description: 'Select multiple options',
          minItems: 1,
          maxItems: 3,
          items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        },
        titledMulti: {
          type: 'array',
          description: 'Select multiple options with titles',
          minItems: 1,
          maxItems: 3,
          items: {
            anyOf: [1, 2, 3].map((i) => ({
              const: `value${i}`,
              title: `${['First', 'Second', 'Third'][i - 1]} Choice`,
            })),
          },
        },
      },
      required: [],
    },
    prefix: 'Elicitation completed',
  },
};

export function registerConformance(server: McpServer): void {
  server.server.registerCapabilities({
    resources: { subscribe: true, listChanged: true },
    completions: {},
    logging: {},
  });

  for (const [name, tool] of Object.entries(FIXED_TOOLS)) {
    server.registerTool(name, { description: tool.description }, () => result(...tool.content));
  }
  server.registerTool('test_error_handling', { description: 'Always fails' }, () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Logs while it runs', inputSchema: z.object({}) },
    async (_args, ctx) => {
      for (const step of [
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ]) {
        await ctx.mcpReq.notify({
          method: 'notifications/message',
          params: { level: 'info', data: step },
        });
        await pause(20);
      }
      return result(text('Tool with logging executed successfully'));
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50, 100', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const { _meta, notify } = ctx.mcpReq;
      const progressToken = _meta?.progressToken ?? 0;
      for (const progress of [0, 50, 100]) {
        await notify({
          method: 'notifications/progress',
          params: {
            progressToken,
            progress,
            total: 100,
            message: `Completed step ${progress} of 100`,
          },
        });
        await pause(20);
      }
      return result(text(String(progressToken)));
    },
  );
  server.registerTool(
    'test_sampling',
    {
      description: 'Asks the client for a completion',
      inputSchema: z.object({ prompt: z.string() }),
    },
    async ({ prompt }, ctx) => {
      try {
        const answer = (await ctx.mcpReq.send({
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
            maxTokens: 100,
          },
        })) as { content?: { text?: string } };
        return result(text(`LLM response: ${answer.content?.text ?? 'No response'}`));
      } catch (error) {
        return result(
          text(
            `Sampling not supported or error: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
      }
    },
  );
  for (const [name, elicitation] of Object.entries(ELICITATIONS)) {
    const input = name === 'test_elicitation' ? z.object({ message: z.string() }) : z.object({});
    server.registerTool(
      name,
      { description: 'Asks the user for input', inputSchema: input },
      async (args: { message?: string }, ctx) => {
        try {
          const answer = (await ctx.mcpReq.send({
            method: 'elicitation/create',
            params: {
              message: elicitation.message ?? args.message ?? '',
              requestedSchema: elicitation.schema,
            },
          })) as { action?: string; content?: unknown };
          return result(
            text(
              `${elicitation.prefix}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`,
            ),
          );
        } catch (error) {
          return result(
            text(
              `Elicitation not supported or error: ${error instanceof Error ? error.message : String(error)}`,
            ),
          );
        }
      },
    );
  }
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'JSON Schema 2020-12 input ($defs, $ref, additionalProperties), kept as written',
      inputSchema: fromJsonSchema<{ name?: string; address?: { street?: string; city?: string } }>({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: {
          address: {
            type: 'object',
            properties: { street: { type: 'string' }, city: { type: 'string' } },
          },
        },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      }),
    },
    (args) => result(text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)),
  );

  registerResourcesAndPrompts(server);
}

export default { name: 'conformance', register: registerConformance };
