/**
 * Batched reads through Multicall3 (sdk/node/multicall3Code.ts): many view calls in one eth_call, all at one block, in
 * bounded batches. Where no Multicall3 is deployed (code is empty at its address) the same reads go one by one, so
 * every caller works on any chain; only the number of requests differs.
 *
 * `aggregate3`'s calldata and result are encoded and walked by hand (aggregate3.ts): ethers' generic coder spent
 * ~2.8 s of JS on the coordinator's first read at 1,000 jobs (hex → bytes copies, a Result object per field), the
 * chain itself ~0.3 s. `readRaw` hands back each call's return data as hex, so a caller with a fixed layout (a static
 * struct, sdk/rules/job.ts) slices words instead of building Results; `read` decodes with the call's ABI as before.
 */
import type { Interface, Provider } from "ethers";
import { decodeAggregate3, encodeAggregate3, type RawCall, type RawResult } from "./aggregate3.ts";
import { MULTICALL3_ADDRESS } from "./multicall3Code.ts";

export type { RawCall, RawResult } from "./aggregate3.ts";

export { MULTICALL3_ABI, MULTICALL3_ADDRESS } from "./multicall3Code.ts";

/** One view call: `fn(...args)` on `target` whose ABI is `iface`. */
export interface ViewCall {
  target: string;
  iface: Interface;
  fn: string;
  args: unknown[];
}

/** A call's decoded result, or the error it reverted with (one failing read never hides the others). */
export type CallResult =
  { ok: true; value: ReturnType<Interface["decodeFunctionResult"]> } | { ok: false; error: Error };

export interface BatchReader {
  /** Where Multicall3 is expected. */
  address: string;
  /** Whether reads really go through Multicall3 (false: one eth_call per read). */
  batched(): Promise<boolean>;
  /** Every call at `blockTag`, results in order. */
  read(calls: ViewCall[], blockTag: number | "latest"): Promise<CallResult[]>;
  /** Every call at `blockTag`, each result as its raw return data (hex), in order; a revert is `success: false`. */
  readRaw(calls: RawCall[], blockTag: number | "latest"): Promise<RawResult[]>;
}

/** Calls per eth_call: well inside a node's gas cap for views (a jobOf costs ~30k gas, so 200 ≈ 6 M). */
export const DEFAULT_BATCH_SIZE = 200;

export function batchReader(provider: Provider, address = MULTICALL3_ADDRESS, batchSize = DEFAULT_BATCH_SIZE) {
  let present: Promise<boolean> | undefined;
  const batched = () => (present ??= provider.getCode(address).then((code) => code !== "0x"));

  async function viaMulticall(calls: RawCall[], blockTag: number | "latest"): Promise<RawResult[]> {
    const chunks: RawCall[][] = [];
    for (let i = 0; i < calls.length; i += batchSize) chunks.push(calls.slice(i, i + batchSize));
    // Side by side: a node answers several eth_calls at once where it can, and the chain is the same block.
    const answers = await Promise.all(
      chunks.map(async (chunk) => {
        const result = await provider.call({ to: address, data: encodeAggregate3(chunk), blockTag });
        const decoded = decodeAggregate3(result);
        if (decoded.length !== chunk.length) throw new Error(`aggregate3 answered ${decoded.length}/${chunk.length}`);
        return decoded;
      }),
    );
    return answers.flat();
  }

  async function oneByOne(calls: RawCall[], blockTag: number | "latest"): Promise<RawResult[]> {
    return Promise.all(
      calls.map(async (c) => {
        try {
          return { success: true, data: await provider.call({ to: c.target, data: c.data, blockTag }) };
        } catch (error) {
          const data = (error as { data?: unknown }).data;
          return { success: false, data: typeof data === "string" ? data : "0x", error: error as Error };
        }
      }),
    );
  }

  async function readRaw(calls: RawCall[], blockTag: number | "latest"): Promise<RawResult[]> {
    if (calls.length === 0) return [];
    return (await batched()) ? viaMulticall(calls, blockTag) : oneByOne(calls, blockTag);
  }

  return {
    address,
    batched,
    readRaw,
    async read(calls, blockTag) {
      const raw = await readRaw(
        calls.map((c) => ({ target: c.target, data: c.iface.encodeFunctionData(c.fn, c.args) })),
        blockTag,
      );
      return raw.map((r, i) =>
        r.error ? { ok: false as const, error: r.error } : decode(calls[i], r.success, r.data),
      );
    },
  } satisfies BatchReader;
}

function decode(c: ViewCall, success: boolean, data: string): CallResult {
  if (!success) return { ok: false, error: new Error(`${c.fn} reverted (${data})`) };
  try {
    return { ok: true, value: c.iface.decodeFunctionResult(c.fn, data) };
  } catch (error) {
    return { ok: false, error: error as Error };
  }
}

/** The value of a result, or throws its error (for reads that must not fail, e.g. a job's own views). */
export function valueOf(r: CallResult): ReturnType<Interface["decodeFunctionResult"]> {
  if (!r.ok) throw r.error;
  return r.value;
}
