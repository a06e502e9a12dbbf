import { describe, expect, it } from 'vitest';
import {
  compileRetryPolicy,
  currentExecution,
  defineToolModule,
  isRetryableError,
  RETRY_DEFAULTS,
  RetryableToolError,
  StepFailedError,
  taskSupportOf,
} from '../src/index.js';
import { runInExecution } from '../src/runtime.js';

const register = () => undefined;

describe('defineToolModule', () => {
  it('takes a module as written and refuses bad metadata early, naming the module and the field', () => {
    const module = defineToolModule({
      name: 'weather',
      register,
      taskSupport: { forecast: 'optional' },
    });
    expect(module.name).toBe('weather');
    expect(() => defineToolModule({ name: '', register })).toThrow(
      /name must be a non-empty string/,
    );
    expect(() => defineToolModule({ name: 'w', register: 'no' as never })).toThrow(
      /defineToolModule\(w\): register must be a function/,
    );
    expect(() => defineToolModule({ name: 'w', sdk: 'v3' as never, register })).toThrow(
      /sdk must be 'v1' or 'v2', got "v3"/,
    );
    expect(defineToolModule({ name: 'w', version: '2.3.0', register }).version).toBe('2.3.0');
    expect(() => defineToolModule({ name: 'w', version: '', register })).toThrow(
      /defineToolModule\(w\): version must be a string of 1..100 characters, got ""/,
    );
    expect(() =>
      defineToolModule({ name: 'w', register, taskSupport: { t: 'sometimes' as never } }),
    ).toThrow(/taskSupport of t must be one of forbidden, optional, required/);
    expect(() => defineToolModule({ name: 'w', register, retry: { maxAttempts: 0 } })).toThrow(
      /retry.maxAttempts: expected a positive integer, got 0/,
    );
    expect(() => defineToolModule({ name: 'w', register, toolTimeoutMs: { t: -1 } })).toThrow(
      /timeoutMs: expected a positive integer/,
    );
  });

  it('a tool’s task support comes from the first module that declares it; undeclared is forbidden', () => {
    const a = defineToolModule({ name: 'a', register, taskSupport: { build: 'required' } });
    const b = defineToolModule({
      name: 'b',
      register,
      taskSupport: { build: 'optional', lint: 'optional' },
    });
    expect(taskSupportOf([a, b], 'build')).toBe('required');
    expect(taskSupportOf([a, b], 'lint')).toBe('optional');
    expect(taskSupportOf([a, b], 'deploy')).toBe('forbidden');
  });
});

describe('retries', () => {
  it('fills the defaults and refuses negative waits', () => {
    expect(compileRetryPolicy()).toEqual(RETRY_DEFAULTS);
    expect(compileRetryPolicy({ maxAttempts: 5 })).toEqual({ ...RETRY_DEFAULTS, maxAttempts: 5 });
    expect(() => compileRetryPolicy({ backoffMs: -1 })).toThrow(
      /retry.backoffMs: expected an integer >= 0/,
    );
  });

  it('a RetryableToolError, or any error that says retryable: true, asks for another execution', () => {
    expect(isRetryableError(new RetryableToolError('busy'))).toBe(true);
    expect(isRetryableError(Object.assign(new Error('429'), { retryable: true }))).toBe(true);
    expect(isRetryableError(new Error('bad input'))).toBe(false);
    expect(isRetryableError('retryable')).toBe(false);
  });
});

describe('the running execution', () => {
  it('is what the runtime runs the tool in, and nothing outside a call', async () => {
    expect(currentExecution()).toBeUndefined();
    const execution = {
      sessionId: 's',
      stream: 'r:1',
      generation: { epoch: 'e', attempt: 2 },
      attempt: 2,
      step: () => Promise.reject(new Error('not here')),
    } as never;
    const seen = await runInExecution(execution, async () => {
      await Promise.resolve();
      return currentExecution();
    });
    expect(seen).toBe(execution);
    expect(currentExecution()).toBeUndefined();
  });

  it('a replayed step that failed throws its journaled error again, name, code and data kept', () => {
    const error = new StepFailedError({
      name: 'CardDeclined',
      message: 'declined',
      code: 402,
      data: { id: 7 },
    });
    expect(error).toMatchObject({
      name: 'CardDeclined',
      message: 'declined',
      code: 402,
      data: { id: 7 },
    });
  });
});
