/** Small React hooks: the chain's health, and chain reads that keep their last good value with its block. */
import { useEffect, useRef, useState } from "react";
import type { ChainHealth, ChainReader } from "./sources/chain.ts";

export function useChainHealth(chain: ChainReader | null): ChainHealth {
  const [h, setH] = useState<ChainHealth>(chain?.health ?? { reachable: null, head: null, headAt: null });
  useEffect(() => {
    if (!chain) return;
    setH(chain.health);
    return chain.subscribe(() => setH(chain.health));
  }, [chain]);
  return h;
}

export interface Read<T> {
  value: T | undefined;
  block: number | null;
  at: number | null;
  stale: boolean; // the latest attempt failed: value is the last good one
  error?: string;
}

/**
 * Reads `read(chain, head)` at every new head block once there is a chain; on failure keeps the last good value,
 * marked stale. `key` names what is read: a new key starts afresh.
 */
export function useChainRead<T>(
  { chain, health }: { chain: ChainReader | null; health: ChainHealth },
  key: string,
  read: (chain: ChainReader, block: number) => Promise<T>,
): Read<T> {
  const head = health.head;
  const [r, setR] = useState<Read<T>>({ value: undefined, block: null, at: null, stale: false });
  const last = useRef<string>("");
  useEffect(() => {
    setR({ value: undefined, block: null, at: null, stale: false });
    last.current = "";
  }, [key]);
  useEffect(() => {
    if (!chain || head === null) return;
    const tag = `${key}@${head}`;
    if (tag === last.current) return;
    last.current = tag;
    let cancelled = false;
    chain
      .read(() => read(chain, head))
      .then((value) => !cancelled && setR({ value, block: head, at: Date.now(), stale: false }))
      .catch((err) => {
        last.current = "";
        if (!cancelled)
          setR((old) => ({ ...old, stale: true, error: String((err as Error).message ?? err).slice(0, 160) }));
      });
    return () => {
      cancelled = true;
    };
  }, [chain, head, health.headAt, key]);
  return r;
}
