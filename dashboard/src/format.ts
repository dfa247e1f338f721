/**
 * The dashboard's formatters for USDC amounts, addresses and times. One small file so that it can be swapped for
 * the product-wide sdk/format.ts once that lands.
 */
export function usdc(units: bigint | string | number | undefined | null): string {
  if (units === undefined || units === null) return "unknown";
  const v = BigInt(units);
  const sign = v < 0n ? "-" : "";
  const abs = v < 0n ? -v : v;
  return `${sign}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, "0")}`;
}

/** A per-step price: 4 decimals are what providers quote (0.0010). */
export function price(units: bigint | string | number): string {
  const v = Number(BigInt(units)) / 1e6;
  return v.toFixed(4);
}

export function short(address: string | undefined | null): string {
  if (!address) return "—";
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

export function ago(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 1500) return "just now";
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

export function clock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

export function timeOfDay(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(11, 19) + " UTC";
}
