import { Admin, type ConnectionOptions } from '@platformatic/kafka';
import { invalidOption } from '@tidemark/protocol';

export interface AdminConnection {
  brokers: readonly string[];
  clientId?: string;
  connection?: Pick<
    ConnectionOptions,
    'tls' | 'sasl' | 'tlsServerName' | 'connectTimeout' | 'requestTimeout'
  >;
}

/** An admin client for the connection (checked: at least one broker). */
export function adminClient(admin: AdminConnection): Admin {
  if (admin.brokers === undefined || admin.brokers.length === 0)
    throw invalidOption('brokers', 'a non-empty list of host:port', admin.brokers);
  return new Admin({
    clientId: admin.clientId ?? 'tidemark-admin',
    bootstrapBrokers: [...admin.brokers],
    ...admin.connection,
  });
}

/** Runs `fn` with an admin client closed afterwards. */
export async function withAdmin<T>(
  admin: AdminConnection,
  fn: (client: Admin) => Promise<T>,
): Promise<T> {
  const client = adminClient(admin);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
