/**
 * Sends a verifier's signatures to the verdict collector: HTTP POST /signatures for checkpoint and verdict
 * decisions, POST /claims for fault claims, their confirmations and "not reproduced" checks; GET /claims lists
 * the pending claims (docs/ARCHITECTURE.md). Sending is idempotent; the runner re-sends every still-pending
 * decision and answer each tick, so a collector restart loses nothing.
 */
import type { FaultBody, SignatureBody } from "./work.ts";

export const DEFAULT_COLLECTOR_URL = "http://127.0.0.1:8601";

export interface SignaturePoster {
  post(body: SignatureBody): Promise<void>;
  /** Every pending fault claim (each with its finder's signature); absent: this verifier re-checks none. */
  claims?(): Promise<FaultBody[]>;
}

/** The path a body goes to. */
export const routeOf = (body: SignatureBody) =>
  body.kind === "fault" || body.kind === "check" ? "/claims" : "/signatures";

export class CollectorError extends Error {
  status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** Talks to the collector at `baseUrl` with a timeout; any non-2xx answer or network failure is a CollectorError. */
export function httpCollector(baseUrl: string, timeoutMs = 5_000): SignaturePoster {
  const call = async (path: string, body?: SignatureBody): Promise<Response> => {
    const url = new URL(path, baseUrl).toString();
    let res: Response;
    try {
      res = await fetch(url, {
        method: body ? "POST" : "GET",
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new CollectorError(`collector ${url} unreachable: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      throw new CollectorError(`collector ${url} answered ${res.status}: ${text.slice(0, 200)}`, res.status);
    }
    return res;
  };
  return {
    async post(body) {
      const res = await call(routeOf(body), body);
      await res.body?.cancel().catch(() => {});
    },
    async claims() {
      const data = (await (await call("/claims")).json()) as { claims?: unknown };
      if (!Array.isArray(data.claims)) throw new CollectorError("collector /claims answered without a claims list");
      return data.claims as FaultBody[];
    },
  };
}
