import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import {
  asRoutingKey,
  SIGNAL_METHOD,
  SignalErrorCodes,
  verifySignalToken,
  type PartitionKey,
  type RequestRecord,
} from '@tidemark/protocol';
import type { GatewayContext } from './gateway-context.js';
import { sendRefusal } from './http/http-answers.js';
import { isJson } from './http/http-guards.js';
import { HttpRefusals } from './http/http-refusals.js';
import { finalMessage, newStream } from './request-answers.js';

// The URLs of signals (`Execution.signal`): `<path>/signals/<token>`. A POST of JSON answers the
// signal: the token is checked here (a forged or expired one is a 404 before the body is read),
// the answer written to `requests` under the call's key, and the worker that owns the call
// journals it if it is the first — its verdict is the answer: 200, 409 (answered before), 400 (the
// schema refuses it), 404. A worker that does not answer in time (down, or its partition moving)
// leaves the answer in the log for the partition's next owner: 202.

/** Bytes a signal's answer may take (the worker journals it as a step: its `maxStepBytes`). */
const MAX_SIGNAL_BYTES = 64 * 1024;
/** How long a POST waits for the worker's verdict before it is answered 202 (accepted). */
const VERDICT_WAIT_MS = 5_000;

interface SignalLocals {
  key: PartitionKey;
  subject: string | undefined;
  share: string;
}

type Handle = (
  handler: (ctx: GatewayContext, req: Request, res: Response) => Promise<void>,
) => (req: Request, res: Response, next: NextFunction) => void;

/** Serves the signals' URLs under the MCP endpoint's path. */
export function installSignals(app: express.Express, ctx: GatewayContext, handle: Handle): void {
  const route = `${ctx.options.path.replace(/\/+$/, '')}/signals/:token`;
  app.post(
    route,
    (req, res, next) =>
      void admitSignal(ctx, req, res)
        .then((admitted) => admitted && next())
        .catch(next),
    express.json({ limit: MAX_SIGNAL_BYTES, type: () => true, strict: false }),
    handle(answerSignal),
  );
  app.all(route, (_req, res) => sendRefusal(res, HttpRefusals.methodNotAllowed()));
}

/** The headers and the token, before the body is read: who asks, and which signal. */
async function admitSignal(ctx: GatewayContext, req: Request, res: Response): Promise<boolean> {
  if (!isJson(req.headers['content-type'])) return refused(res, HttpRefusals.contentType());
  if (Number(req.headers['content-length'] ?? 0) > MAX_SIGNAL_BYTES)
    return refused(res, HttpRefusals.declaredBodyTooLarge(MAX_SIGNAL_BYTES));
  const access = await ctx.access.checkSignal(req);
  if (!access.ok) return refused(res, access.refusal);
  const verified = verifySignalToken(ctx.keyring, req.params['token'], Date.now());
  if (!verified.ok) return refused(res, HttpRefusals.signalUnknown());
  const { auth, share } = access.value;
  const locals: SignalLocals = {
    key: asRoutingKey(verified.claim.owner as PartitionKey),
    subject: auth?.subject,
    share,
  };
  Object.assign(res.locals, locals);
  return true;
}

async function answerSignal(ctx: GatewayContext, req: Request, res: Response): Promise<void> {
  const { key, subject, share } = res.locals as SignalLocals;
  const id = `tm-signal-${randomUUID()}`;
  const record: RequestRecord = {
    lane: 'stateless',
    key: asRoutingKey(key),
    message: {
      jsonrpc: '2.0',
      id,
      method: SIGNAL_METHOD,
      params: { token: req.params['token'], value: req.body as unknown },
    },
    classification: null,
    subject,
    share,
  };
  const started = await newStream(ctx, key, id);
  const verdict = finalMessage(ctx, key, started, res);
  await ctx.producer.produce(key, [record]);
  let timer: NodeJS.Timeout | undefined;
  const payload = await Promise.race([
    verdict,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), VERDICT_WAIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  if (payload === undefined) {
    // In the log: the partition's next owner answers it. The client learns no more here.
    res.status(202).json({ accepted: true });
    return;
  }
  const { result, error } = payload as {
    result?: unknown;
    error?: { code?: number; message?: string };
  };
  if (result !== undefined) return void res.status(200).json(result);
  const message = error?.message ?? 'the signal was not answered';
  switch (error?.code) {
    case SignalErrorCodes.unknown:
      return sendRefusal(res, HttpRefusals.signalUnknown(message));
    case SignalErrorCodes.answered:
      return sendRefusal(res, HttpRefusals.signalAnswered(message));
    case SignalErrorCodes.invalid:
      return sendRefusal(res, HttpRefusals.signalInvalid(message));
    default:
      throw new Error(`a signal's answer failed: ${message}`);
  }
}

function refused(res: Response, refusal: Parameters<typeof sendRefusal>[1]): false {
  res.setHeader('Connection', 'close');
  sendRefusal(res, refusal);
  return false;
}
