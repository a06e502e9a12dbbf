/** Minimal byte writer and reader with unsigned LEB128 varints, for the event id format. */

export class ByteWriter {
  private readonly chunks: number[] = [];

  byte(value: number): this {
    this.chunks.push(value & 0xff);
    return this;
  }

  bytes(value: Uint8Array): this {
    for (const b of value) this.chunks.push(b);
    return this;
  }

  varint(value: bigint | number): this {
    let rest = BigInt(value);
    do {
      let b = Number(rest & 0x7fn);
      rest >>= 7n;
      if (rest > 0n) b |= 0x80;
      this.chunks.push(b);
    } while (rest > 0n);
    return this;
  }

  toBuffer(): Buffer {
    return Buffer.from(this.chunks);
  }
}

/** Reads without throwing: every method returns undefined once the input is short or bad. */
export class ByteReader {
  private position = 0;

  constructor(private readonly buffer: Buffer) {}

  get offset(): number {
    return this.position;
  }

  get remaining(): number {
    return this.buffer.length - this.position;
  }

  byte(): number | undefined {
    if (this.position >= this.buffer.length) return undefined;
    return this.buffer[this.position++];
  }

  bytes(length: number): Buffer | undefined {
    if (length < 0 || this.position + length > this.buffer.length) return undefined;
    const slice = this.buffer.subarray(this.position, this.position + length);
    this.position += length;
    return slice;
  }

  /** A varint of at most `maxBytes` bytes (10 covers 64 bits); non-minimal encodings are refused. */
  varint(maxBytes = 10): bigint | undefined {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < maxBytes; i++) {
      const b = this.byte();
      if (b === undefined) return undefined;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        // A trailing zero byte means the same number had a shorter encoding: one id, one spelling.
        if (b === 0 && i > 0) return undefined;
        return result;
      }
      shift += 7n;
    }
    return undefined;
  }

  smallVarint(max: number): number | undefined {
    const value = this.varint(5);
    return value === undefined || value > BigInt(max) ? undefined : Number(value);
  }
}
