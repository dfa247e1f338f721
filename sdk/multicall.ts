/**
 * Batched reads through Multicall3 (sdk/multicall3Code.ts): many view calls in one eth_call, all at one block, in
 * bounded batches. Where no Multicall3 is deployed (code is empty at its address) the same reads go one by one, so
 * every caller works on any chain; only the number of requests differs.
 */
import { Contract, type Interface, type Provider } from "ethers";
import { MULTICALL3_ABI, MULTICALL3_ADDRESS } from "./multicall3Code.ts";

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
}

/** Calls per eth_call: well inside a node's gas cap for views (a jobOf costs ~30k gas, so 200 ≈ 6 M). */
export const DEFAULT_BATCH_SIZE = 200;

export function batchReader(provider: Provider, address = MULTICALL3_ADDRESS, batchSize = DEFAULT_BATCH_SIZE) {
  const multicall = new Contract(address, MULTICALL3_ABI, provider);
  let present: Promise<boolean> | undefined;
  const batched = () => (present ??= provider.getCode(address).then((code) => code !== "0x"));

  async function viaMulticall(calls: ViewCall[], blockTag: number | "latest"): Promise<CallResult[]> {
    const out: CallResult[] = [];
    for (let i = 0; i < calls.length; i += batchSize) {
      const chunk = calls.slice(i, i + batchSize);
      const encoded = chunk.map((c) => ({
        target: c.target,
        allowFailure: true,
        callData: c.iface.encodeFunctionData(c.fn, c.args),
      }));
      const results: { success: boolean; returnData: string }[] = await multicall.aggregate3.staticCall(encoded, {
        blockTag,
      });
      results.forEach((r, j) => out.push(decode(chunk[j], r.success, r.returnData)));
    }
    return out;
  }

  async function oneByOne(calls: ViewCall[], blockTag: number | "latest"): Promise<CallResult[]> {
    return Promise.all(
      calls.map(async (c) => {
        try {
          const data = await provider.call({ to: c.target, data: c.iface.encodeFunctionData(c.fn, c.args), blockTag });
          return decode(c, true, data);
        } catch (error) {
          return { ok: false as const, error: error as Error };
        }
      }),
    );
  }

  return {
    address,
    batched,
    async read(calls, blockTag) {
      if (calls.length === 0) return [];
      return (await batched()) ? viaMulticall(calls, blockTag) : oneByOne(calls, blockTag);
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
