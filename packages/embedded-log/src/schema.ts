import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';

export type CleanupPolicy = 'delete' | 'compact';

/** A row of `topics`. */
export interface TopicRow {
  name: string;
  topic_id: string;
  partitions: number;
  cleanup: CleanupPolicy;
  retention_ms: number | null;
  retention_records: number | null;
}

/**
 * Records written by one statement when a commit has that many: one call into SQLite for them,
 * instead of one each (a row's parameters are bound either way).
 */
export const INSERT_CHUNK = 32;

/** The prepared statements every operation uses (prepared once per file). */
export interface Statements {
  topic: StatementSync;
  allTopics: StatementSync;
  insertTopic: StatementSync;
  insertPartition: StatementSync;
  partition: StatementSync;
  insert: StatementSync;
  /** `insert` of INSERT_CHUNK rows at once. */
  insertChunk: StatementSync;
  bumpNext: StatementSync;
  read: StatementSync;
  setStart: StatementSync;
  deleteBelow: StatementSync;
  compact: StatementSync;
  oldestKeptSince: StatementSync;
  committed: StatementSync;
  commit: StatementSync;
  begin: StatementSync;
  commitTransaction: StatementSync;
  rollback: StatementSync;
}

/** `PRAGMA auto_vacuum` value of incremental vacuum. */
const INCREMENTAL_VACUUM = 2;

/**
 * Opens (or creates) the log's SQLite file: its tables, its cluster id, its statements. Pages freed
 * by retention and compaction go back to the file system (incremental vacuum), so the file is
 * bounded by what is live; a file made before that is rewritten once.
 */
export function openDatabase(path: string): {
  db: DatabaseSync;
  clusterId: string;
  statements: Statements;
} {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  if (path !== ':memory:') lockExclusively(db, path);
  const autoVacuum = (db.prepare('PRAGMA auto_vacuum').get() as { auto_vacuum: number })
    .auto_vacuum;
  if (autoVacuum !== INCREMENTAL_VACUUM)
    db.exec(`PRAGMA auto_vacuum = ${INCREMENTAL_VACUUM}; VACUUM;`);
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS topics (
      name TEXT PRIMARY KEY, topic_id TEXT NOT NULL, partitions INTEGER NOT NULL,
      cleanup TEXT NOT NULL, retention_ms INTEGER, retention_records INTEGER);
    CREATE TABLE IF NOT EXISTS partitions (
      topic TEXT NOT NULL, partition INTEGER NOT NULL, log_start INTEGER NOT NULL, next_offset INTEGER NOT NULL,
      PRIMARY KEY (topic, partition));
    CREATE TABLE IF NOT EXISTS records (
      topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL, key TEXT, value BLOB,
      headers TEXT NOT NULL, ts INTEGER NOT NULL, PRIMARY KEY (topic, partition, offset)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS group_offsets (
      grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
      PRIMARY KEY (grp, topic, partition));
  `);
  db.prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)').run(
    'cluster_id',
    randomUUID(),
  );
  const { value } = db.prepare('SELECT value FROM meta WHERE key = ?').get('cluster_id') as {
    value: string;
  };
  return { db, clusterId: String(value), statements: prepare(db) };
}

function prepare(db: DatabaseSync): Statements {
  const statements: Statements = {
    topic: db.prepare('SELECT * FROM topics WHERE name = ?'),
    allTopics: db.prepare('SELECT * FROM topics'),
    insertTopic: db.prepare(
      'INSERT INTO topics (name, topic_id, partitions, cleanup, retention_ms, retention_records) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    insertPartition: db.prepare(
      'INSERT INTO partitions (topic, partition, log_start, next_offset) VALUES (?, ?, 0, 0)',
    ),
    partition: db.prepare(
      'SELECT log_start, next_offset FROM partitions WHERE topic = ? AND partition = ?',
    ),
    insert: db.prepare(
      'INSERT INTO records (topic, partition, offset, key, value, headers, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    insertChunk: db.prepare(
      `INSERT INTO records (topic, partition, offset, key, value, headers, ts) VALUES ${Array.from({ length: INSERT_CHUNK }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    ),
    bumpNext: db.prepare('UPDATE partitions SET next_offset = ? WHERE topic = ? AND partition = ?'),
    read: db.prepare(
      'SELECT offset, key, value, headers, ts FROM records WHERE topic = ? AND partition = ? AND offset >= ? ORDER BY offset LIMIT ?',
    ),
    setStart: db.prepare(
      'UPDATE partitions SET log_start = ? WHERE topic = ? AND partition = ? AND log_start < ?',
    ),
    deleteBelow: db.prepare('DELETE FROM records WHERE topic = ? AND partition = ? AND offset < ?'),
    // One pass for the latest offset of every key (an uncorrelated subquery, computed once).
    compact: db.prepare(
      `DELETE FROM records WHERE topic = :topic AND partition = :partition AND offset < :below
         AND ts <= :before AND (value IS NULL OR offset NOT IN (
           SELECT MAX(offset) FROM records WHERE topic = :topic AND partition = :partition GROUP BY key))`,
    ),
    oldestKeptSince: db.prepare(
      'SELECT MIN(offset) AS o FROM records WHERE topic = ? AND partition = ? AND ts >= ?',
    ),
    committed: db.prepare(
      'SELECT offset FROM group_offsets WHERE grp = ? AND topic = ? AND partition = ?',
    ),
    commit: db.prepare(
      'INSERT INTO group_offsets (grp, topic, partition, offset) VALUES (?, ?, ?, ?) ON CONFLICT (grp, topic, partition) DO UPDATE SET offset = excluded.offset',
    ),
    begin: db.prepare('BEGIN IMMEDIATE'),
    commitTransaction: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
  };
  for (const statement of [
    statements.partition,
    statements.read,
    statements.oldestKeptSince,
    statements.committed,
  ])
    statement.setReadBigInts(true);
  return statements;
}

/** SQLite's result code for a lock another connection holds. */
const SQLITE_BUSY = 5;

/** Who holds a log file: written beside it by the process that locked it, read by the one refused. */
interface LogOwner {
  pid: number;
  hostname: string;
  since: string;
}

/**
 * Takes the file for this connection alone, for as long as it is open: SQLite's exclusive locking
 * mode holds the OS lock (fcntl) from the first write until the connection closes, so a second
 * process is refused at once, and a process killed with -9 leaves no lock behind (the kernel drops
 * it). Two writers on one file would each trust their own in-memory offsets and run every request
 * twice.
 */
function lockExclusively(db: DatabaseSync, path: string): void {
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT;');
  } catch (error) {
    db.close();
    if ((error as { errcode?: unknown }).errcode !== SQLITE_BUSY) throw error;
    const owner = readOwner(path);
    const who =
      owner === undefined
        ? 'another process'
        : `process ${owner.pid} on ${owner.hostname} (since ${owner.since})`;
    throw new TidemarkError(ErrorCodes.logLocked, `the log ${path} is in use by ${who}`, {
      cause: error,
    });
  }
  const owner: LogOwner = {
    pid: process.pid,
    hostname: hostname(),
    since: new Date().toISOString(),
  };
  writeFileSync(ownerPath(path), `${JSON.stringify(owner)}\n`, { mode: 0o600 });
}

const ownerPath = (path: string) => `${path}.owner`;

/** The process that last locked the file, as it wrote itself down (absent or unreadable: undefined). */
function readOwner(path: string): LogOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(ownerPath(path), 'utf8')) as LogOwner;
    return typeof owner.pid === 'number' ? owner : undefined;
  } catch {
    return undefined;
  }
}
