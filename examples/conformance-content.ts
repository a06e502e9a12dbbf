import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

// The conformance fixture's resources and prompts (its tools are in conformance.ts).

/** A 1×1 PNG, as the suite expects it. */
export const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** The resources and prompts the suite's scenarios read, with their exact contents. */
export function registerResourcesAndPrompts(server: McpServer): void {
  const staticResources: Array<[string, string, Record<string, unknown>]> = [
    ['static-text', 'text/plain', { text: 'This is the content of the static text resource.' }],
    ['static-binary', 'image/png', { blob: PNG }],
    ['watched-resource', 'text/plain', { text: 'Watched resource content' }],
  ];
  for (const [name, mimeType, body] of staticResources) {
    const uri = `test://${name}`;
    server.registerResource(name, uri, { title: name, mimeType }, () => ({
      contents: [{ uri, mimeType, ...body } as unknown as { uri: string; text: string }],
    }));
  }
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { mimeType: 'application/json' },
    (uri, variables) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: 'application/json',
          text: JSON.stringify({
            id: variables['id'],
            templateTest: true,
            data: `Data for ID: ${String(variables['id'])}`,
          }),
        },
      ],
    }),
  );
  server.server.setRequestHandler('resources/subscribe', () => ({}));
  server.server.setRequestHandler('resources/unsubscribe', () => ({}));
  server.server.setRequestHandler('completion/complete', () => ({
    completion: { values: [], total: 0, hasMore: false },
  }));

  server.registerPrompt('test_simple_prompt', { description: 'No arguments' }, () => ({
    messages: [
      { role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } },
    ],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    { description: 'Two arguments', argsSchema: z.object({ arg1: z.string(), arg2: z.string() }) },
    ({ arg1, arg2 }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'Embeds a resource', argsSchema: z.object({ resourceUri: z.string() }) },
    ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        {
          role: 'user',
          content: { type: 'text', text: 'Please process the embedded resource above.' },
        },
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { description: 'Includes an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
}
