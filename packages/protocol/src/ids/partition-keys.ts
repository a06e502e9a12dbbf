import { createHash, randomFillSync } from 'node:crypto';
import type { PartitionKey } from './ids.js';

// Keys minted onto chosen partitions (docs/scaling.md, "Each gateway reads its share"). A key's
// partition is the hash of the whole key (`partitionForSession`), as every release computes it, so
// a key is chosen by drawing random ones until one hashes where it is wanted — nothing about the
// rule changes, and a key minted here means the same to a release that never heard of minting.
//
// A key a client sends back (a session id, a task id in `Mcp-Name`) starts with its partition:
// `p` and the partition in base 36, four characters in all, so an ingress that hashes on those
// characters sends every request of one partition to one gateway.

/** Partitions a four-character tag can name: `p` and three base-36 digits. */
const TAGGED_PARTITIONS = 36 ** 3;
/** Draws before giving up on a wish: a miss after 64 × partitions draws has odds below e⁻⁶⁴. */
const DRAWS_PER_PARTITION = 64;
const RANDOM_BYTES = 16;

const pool = Buffer.alloc(RANDOM_BYTES * 256);
let poolAt = pool.length;

/** 128 fresh random bits, base64url (22 characters), from a pool refilled 256 draws at a time. */
function randomPart(): string {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += RANDOM_BYTES;
  return pool.toString('base64url', poolAt - RANDOM_BYTES, poolAt);
}

/** The tag a key minted onto `partition` starts with, if the partition count allows one. */
export function partitionTag(partition: number, partitionCount: number): string | undefined {
  if (partitionCount > TAGGED_PARTITIONS) return undefined;
  return `p${partition.toString(36).padStart(3, '0')}`;
}

/**
 * A key on `partition`, tagged with it (a key a client sends back, for ingress affinity). Costs
 * about `partitionCount` hashes (~1 µs each).
 */
export function keyOnPartition(partition: number, partitionCount: number): PartitionKey {
  if (!Number.isInteger(partition) || partition < 0 || partition >= partitionCount)
    throw new RangeError(`partition: expected 0 to ${partitionCount - 1}, got ${partition}`);
  const tag = partitionTag(partition, partitionCount) ?? '';
  return draw(tag, partitionCount, (p) => p === partition);
}

/**
 * An untagged key on any of `partitions` (a key no client sends back): about
 * `partitionCount ÷ partitions.length` hashes.
 */
export function keyInPartitions(
  partitions: ReadonlySet<number>,
  partitionCount: number,
): PartitionKey {
  return draw('', partitionCount, (p) => partitions.has(p));
}

function draw(
  prefix: string,
  partitionCount: number,
  wanted: (p: number) => boolean,
): PartitionKey {
  const base = createHash('sha256').update(prefix);
  let key = '';
  for (let i = 0; i < DRAWS_PER_PARTITION * partitionCount; i++) {
    const random = randomPart();
    key = prefix + random;
    if (wanted(base.copy().update(random).digest().readUInt32BE(0) % partitionCount)) break;
  }
  // A key that missed every draw (odds below e⁻⁶⁴) is still a valid random key, on some partition.
  return key as PartitionKey;
}
