import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A task the client is waiting for: enough to follow it again after a restart. */
export interface StoredTask {
  readonly taskId: string;
  /** The MCP endpoint that created it (any replica of the deployment answers for it). */
  readonly url: string;
  readonly tool: string;
  readonly createdAt: string;
}

/**
 * Where a client keeps the ids of its unfinished tasks, so that polling resumes after a crash or a
 * restart (the extension: "Clients SHOULD persist task IDs to durable storage").
 */
export interface TaskStore {
  put(task: StoredTask): Promise<void>;
  delete(taskId: string): Promise<void>;
  list(): Promise<StoredTask[]>;
}

/** Keeps task ids for the life of the process. */
export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, StoredTask>();

  put(task: StoredTask): Promise<void> {
    this.tasks.set(task.taskId, task);
    return Promise.resolve();
  }

  delete(taskId: string): Promise<void> {
    this.tasks.delete(taskId);
    return Promise.resolve();
  }

  list(): Promise<StoredTask[]> {
    return Promise.resolve([...this.tasks.values()]);
  }
}

/**
 * Keeps task ids in one JSON file, written whole to a temporary file and renamed over the old one
 * (a crash leaves the old list or the new, never half of one). Writes are serialised.
 */
export class FileTaskStore implements TaskStore {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly path: string) {}

  put(task: StoredTask): Promise<void> {
    return this.update((tasks) => [...tasks.filter((t) => t.taskId !== task.taskId), task]);
  }

  delete(taskId: string): Promise<void> {
    return this.update((tasks) => tasks.filter((t) => t.taskId !== taskId));
  }

  async list(): Promise<StoredTask[]> {
    await this.queue;
    return this.read();
  }

  private update(change: (tasks: StoredTask[]) => StoredTask[]): Promise<void> {
    const next = this.queue.then(async () => {
      const tasks = change(await this.read());
      await mkdir(dirname(this.path), { recursive: true });
      const temporary = `${this.path}.${process.pid}.tmp`;
      await writeFile(temporary, JSON.stringify(tasks, null, 2), { mode: 0o600 });
      await rename(temporary, this.path);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async read(): Promise<StoredTask[]> {
    try {
      const parsed: unknown = JSON.parse(await readFile(this.path, 'utf8'));
      return Array.isArray(parsed) ? (parsed as StoredTask[]) : [];
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }
}
