/** Reconnect delays: 1 s, 2 s, 4 s … capped, reset after a success. Pure. */
export function nextDelay(failures: number, baseMs = 1000, maxMs = 15_000): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
}
