/**
 * Sends a verifier's signatures to the verdict collector: HTTP POST /signatures (docs/ARCHITECTURE.md). Sending is
 * idempotent; the runner re-sends every still-pending decision each tick, so a collector restart loses nothing.
 */
import type { SignatureBody } from "./work.ts";

export const DEFAULT_COLLECTOR_URL = "http://127.0.0.1:8601";

export interface SignaturePoster {
  post(body: SignatureBody): Promise<void>;
}

export class CollectorError extends Error {
  status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** Posts to `${baseUrl}/signatures` with a timeout; any non-2xx answer or network failure is a CollectorError. */
export function httpCollector(baseUrl: string, timeoutMs = 5_000): SignaturePoster {
  const url = new URL("/signatures", baseUrl).toString();
  return {
    async post(body) {
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        throw new CollectorError(`collector ${url} unreachable: ${(err as Error).message}`);
      }
      if (!res.ok) {
        const text = await res.text().catch(() => "");
        throw new CollectorError(`collector ${url} answered ${res.status}: ${text.slice(0, 200)}`, res.status);
      }
      await res.body?.cancel().catch(() => {});
    },
  };
}
