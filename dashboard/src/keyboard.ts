/**
 * The shortcuts `?` lists. Pure: a key press (and the previous key, for `g s`) → an action, or nothing.
 * Ignored while typing in a field and with Ctrl/Alt/Meta, so nothing the browser reserves is taken.
 */
export type Action =
  | { kind: "help" }
  | { kind: "close" }
  | { kind: "page"; page: string }
  | { kind: "wallet" }
  | { kind: "live" }
  | { kind: "play" }
  | { kind: "seek"; by: number }
  | { kind: "seekTo"; to: "start" | "end" }
  | { kind: "speed"; by: 1 | -1 };

export const SHORTCUTS: [string, string][] = [
  ["?", "open or close this list"],
  ["Esc", "close"],
  ["1 – 5", "Status, Provide compute, On-chain, Help, Recorded run"],
  ["g s · g p · g o · g h · g r", "go to Status, Provide compute, On-chain, Help, Recorded run"],
  ["/", "Check any wallet"],
  ["l", "switch between live and the recorded run"],
  ["Space", "play or pause (recorded run)"],
  ["← →", "back or forward 5 s"],
  ["Home End", "start or end of the recording"],
  ["[ ]", "slower or faster"],
];

export function isTyping(target: EventTarget | null): boolean {
  const el = target as { tagName?: string; isContentEditable?: boolean } | null;
  if (!el || !el.tagName) return false;
  const tag = el.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable === true;
}

export function keyAction(
  e: { key: string; ctrlKey: boolean; altKey: boolean; metaKey: boolean; target: EventTarget | null },
  previous: string | null,
  pages: readonly { id: string; key: string; g: string }[],
): Action | null {
  if (e.ctrlKey || e.altKey || e.metaKey || isTyping(e.target)) return null;
  if (previous === "g") {
    const p = pages.find((x) => x.g === e.key);
    return p ? { kind: "page", page: p.id } : null;
  }
  const byNumber = pages.find((x) => x.key === e.key);
  if (byNumber) return { kind: "page", page: byNumber.id };
  switch (e.key) {
    case "?":
      return { kind: "help" };
    case "Escape":
      return { kind: "close" };
    case "/":
      return { kind: "wallet" };
    case "l":
      return { kind: "live" };
    case " ":
      return { kind: "play" };
    case "ArrowLeft":
      return { kind: "seek", by: -5000 };
    case "ArrowRight":
      return { kind: "seek", by: 5000 };
    case "Home":
      return { kind: "seekTo", to: "start" };
    case "End":
      return { kind: "seekTo", to: "end" };
    case "[":
      return { kind: "speed", by: -1 };
    case "]":
      return { kind: "speed", by: 1 };
    default:
      return null;
  }
}
