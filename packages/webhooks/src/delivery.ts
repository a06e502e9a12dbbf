import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { MAX_WEBHOOK_BODY_BYTES, messageOf, SUBSCRIPTION_ID_HEADER } from '@tidemark/protocol';
import { Webhook } from 'standardwebhooks';
import type { CallbackTarget } from './callback-url.js';

// One webhook delivery: a signed POST of one body to a checked, pinned target. Redirects are not
// followed (a 3xx is the receiver's answer), the request has a time budget, and the response is
// read only as far as a verification challenge needs.

export interface WebhookPost {
  readonly target: CallbackTarget;
  /** The subscription's signing secret, as the client gave it (`whsec_` + base64). */
  readonly secret: string;
  /** `webhook-id`: an occurrence's `eventId`, stable across retries (receivers deduplicate on it). */
  readonly messageId: string;
  readonly subscriptionId: string;
  /** The JSON body, one event or one control message. */
  readonly body: string;
  /**
   * The whole request's time budget, connection included.
   * @default 10 s
   */
  readonly timeoutMs?: number;
  /** The signing time. @default now */
  readonly now?: Date;
}

/** How a delivery ended: what the receiver answered, and whether trying again may help. */
export type DeliveryOutcome =
  | { readonly ok: true; readonly status: number; readonly response: string }
  | {
      readonly ok: false;
      readonly status: number | undefined;
      /** Worth another try later: a timeout, a network failure, 408, 425, 429, 5xx. */
      readonly retryable: boolean;
      /** 410: the receiver no longer has the subscription; deliveries should end. */
      readonly gone: boolean;
      readonly error: string;
    };

/** What of a response is read: enough for `{ "challenge": … }`, never a receiver's whole page. */
const MAX_RESPONSE_BYTES = 4096;
const RETRYABLE_STATUSES = new Set([408, 425, 429]);

/** Signs and POSTs one body; never throws: every failure is an outcome. */
export async function postWebhook(post: WebhookPost): Promise<DeliveryOutcome> {
  const bytes = Buffer.byteLength(post.body);
  if (bytes > MAX_WEBHOOK_BODY_BYTES)
    return failed(undefined, false, `the body is ${bytes} bytes, over ${MAX_WEBHOOK_BODY_BYTES}`);
  let signature: string;
  const now = post.now ?? new Date();
  try {
    signature = new Webhook(post.secret).sign(post.messageId, now, post.body);
  } catch (error) {
    return failed(undefined, false, `the signing secret is unusable: ${messageOf(error)}`);
  }
  const headers = {
    'content-type': 'application/json',
    'content-length': String(bytes),
    'user-agent': 'tidemark-webhooks',
    'webhook-id': post.messageId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signature,
    [SUBSCRIPTION_ID_HEADER]: post.subscriptionId,
  };
  try {
    const response = await send(post, headers);
    return classify(response.status, response.text);
  } catch (error) {
    return failed(undefined, true, messageOf(error));
  }
}

function send(
  post: WebhookPost,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const { url, address, family } = post.target;
  // The connection goes to the address that was checked, whatever the name resolves to now.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers,
      lookup,
      signal: AbortSignal.timeout(post.timeoutMs ?? 10_000),
    });
    req.once('error', reject);
    req.once('response', (res) => void readSome(res).then(resolve, reject));
    req.end(post.body);
  });
}

function readSome(res: IncomingMessage): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const done = () => {
      res.destroy();
      resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
    };
    res.on('data', (chunk: Buffer) => {
      if (length >= MAX_RESPONSE_BYTES) return done();
      chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - length));
      length += chunk.length;
    });
    res.once('end', done);
    res.once('error', reject);
  });
}

function classify(status: number, response: string): DeliveryOutcome {
  if (status >= 200 && status < 300) return { ok: true, status, response };
  if (status >= 300 && status < 400)
    return failed(status, false, `the receiver answered ${status}: redirects are not followed`);
  if (status === 410)
    return { ok: false, status, retryable: false, gone: true, error: 'gone (410)' };
  const retryable = status >= 500 || RETRYABLE_STATUSES.has(status);
  return failed(status, retryable, `the receiver answered ${status}`);
}

function failed(status: number | undefined, retryable: boolean, error: string): DeliveryOutcome {
  return { ok: false, status, retryable, gone: false, error };
}
