/**
 * Multicall3 `aggregate3((address,bool,bytes)[])` calldata and its `(bool,bytes)[]` result, encoded and walked by
 * hand on hex strings: the layout is fixed, so there is nothing to interpret, and the generic ABI coder's cost
 * (byte copies and a Result object per value) dominated a cold read of 1,000 jobs. Every call allows failure.
 * Checked against ethers' coder in test/sdk/aggregate3.ts.
 */

/** One call: calldata (hex) for `target`. */
export interface RawCall {
  target: string;
  data: string;
}

/** One call's answer: its return data (or revert data) as hex; `error` when the node refused it outright. */
export interface RawResult {
  success: boolean;
  data: string;
  error?: Error;
}

/** keccak256("aggregate3((address,bool,bytes)[])")[0..4]. */
export const AGGREGATE3_SELECTOR = "0x82ad56cb";

const ZEROS = "0".repeat(64);
const word = (n: number) => n.toString(16).padStart(64, "0");

function hexBody(hex: string, what: string): string {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(hex)) throw new TypeError(`${what} is not hex bytes: ${hex.slice(0, 42)}`);
  return hex.slice(2);
}

/** The calldata of `aggregate3(calls)` with `allowFailure` true for every call. */
export function encodeAggregate3(calls: readonly RawCall[]): string {
  const heads: string[] = [];
  const tails: string[] = [];
  let offset = 32 * calls.length; // tuples start after the n offsets
  for (const c of calls) {
    const target = hexBody(c.target, "target").toLowerCase();
    if (target.length !== 40) throw new TypeError(`target ${c.target} is not an address`);
    const data = hexBody(c.data, "callData");
    const pad = (64 - (data.length % 64)) % 64;
    // (address target, bool allowFailure = true, offset of callData = 3 words, length, bytes padded to a word)
    const tuple = ZEROS.slice(40) + target + word(1) + word(96) + word(data.length / 2) + data + ZEROS.slice(0, pad);
    heads.push(word(offset));
    tails.push(tuple);
    offset += tuple.length / 2;
  }
  return AGGREGATE3_SELECTOR + word(32) + word(calls.length) + heads.join("") + tails.join("");
}

/** `aggregate3`'s return data → each call's success and return data (hex), in order. */
export function decodeAggregate3(result: string): RawResult[] {
  const hex = hexBody(result, "aggregate3 result");
  const at = (byte: number): number => {
    if (2 * byte + 64 > hex.length) throw new RangeError(`aggregate3 result too short (word at byte ${byte})`);
    const w = hex.slice(2 * byte, 2 * byte + 64);
    // Offsets and lengths: anything above 2^48 would be a malformed answer, never a real size.
    if (w.slice(0, 52) !== ZEROS.slice(0, 52)) throw new RangeError(`aggregate3 result: word ${w} is not a size`);
    return parseInt(w.slice(52), 16);
  };
  const array = at(0);
  const n = at(array);
  const base = array + 32;
  const out: RawResult[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const tuple = base + at(base + 32 * i);
    const success = at(tuple) !== 0;
    const data = tuple + at(tuple + 32);
    const length = at(data);
    if (2 * (data + 32 + length) > hex.length) throw new RangeError(`aggregate3 result too short (call ${i})`);
    out[i] = { success, data: "0x" + hex.slice(2 * (data + 32), 2 * (data + 32 + length)) };
  }
  return out;
}
