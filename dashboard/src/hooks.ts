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
 * marked stale. `key` names what is read: a new key, or a new chain reader, starts afresh.
 */
export function useChainRead<T>(
  { chain, health }: { chain: ChainReader | null; health: ChainHealth },
  key: string,
  read: (chain: ChainReader, block: number) => Promise<T>,
): Read<T> {
  const head = health.head;
  const [r, setR] = useState<Read<T>>({ value: undefined, block: null, at: null, stale: false });
  const last = useRef<string>("");
  /** Bumped for each read begun and for a new key or chain reader: only the latest read's answer is kept. */
  const generation = useRef(0);
  // A new key, or a new chain reader (the server's deployment changed): start afresh. A read of the old reader may
  // never settle (stopped), so its tag must not keep the new one from reading at the same head.
  useEffect(() => {
    setR({ value: undefined, block: null, at: null, stale: false });
    last.current = "";
    generation.current += 1;
  }, [key, chain]);
  useEffect(() => {
    if (!chain || head === null) return;
    const tag = `${key}@${head}`;
    if (tag === last.current) return;
    last.current = tag;
    const gen = ++generation.current;
    // Its answer is kept even when the health ticked meanwhile (a re-render that starts no new read at this head:
    // dropping it would leave "Reading…" until the next block, forever on a chain that mines none); only the
    // latest read begun answers (an earlier block's answer arriving late is dropped).
    chain
      .read(() => read(chain, head))
      .then((value) => {
        if (gen === generation.current) setR({ value, block: head, at: Date.now(), stale: false });
      })
      .catch((err) => {
        if (gen !== generation.current) return;
        last.current = ""; // read again at the next health tick
        const error = String((err as Error).message ?? err).slice(0, 160);
        setR((old) => ({ ...old, stale: true, error }));
      });
  }, [chain, head, health.headAt, key]);
  return r;
}
