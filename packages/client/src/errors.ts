import { JsonRpcErrorCodes } from '@tidemark/protocol';

/** A JSON-RPC error the server answered (a refused request, or a task that failed). */
export class McpRequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'McpRequestError';
  }
}

/** The task ended `failed`: its JSON-RPC error. */
export class TaskFailedError extends McpRequestError {
  constructor(
    readonly taskId: string,
    error: { code?: unknown; message?: unknown; data?: unknown },
  ) {
    super(
      typeof error.code === 'number' ? error.code : JsonRpcErrorCodes.internalError,
      typeof error.message === 'string' ? error.message : 'the task failed',
      error.data,
    );
    this.name = 'TaskFailedError';
  }
}

/** The task ended `cancelled`. */
export class TaskCancelledError extends Error {
  constructor(readonly taskId: string) {
    super(`task ${taskId} was cancelled`);
    this.name = 'TaskCancelledError';
  }
}

/** The task asks for input and the client was given no way to answer it. */
export class TaskInputError extends Error {
  constructor(
    readonly taskId: string,
    readonly inputRequests: Readonly<Record<string, unknown>>,
  ) {
    super(
      `task ${taskId} needs input (${Object.keys(inputRequests).join(', ')}) and no answerInput was given`,
    );
    this.name = 'TaskInputError';
  }
}
