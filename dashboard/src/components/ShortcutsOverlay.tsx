import { useEffect, useRef } from "react";
import { SHORTCUTS } from "../keyboard.ts";

/** The keyboard shortcuts as a definition list (the overlay's and the help page's). */
export function ShortcutList({ className }: { className: string }) {
  return (
    <dl className={className}>
      {SHORTCUTS.map(([k, what]) => (
        <div key={k}>
          <dt>
            <kbd>{k}</kbd>
          </dt>
          <dd>{what}</dd>
        </div>
      ))}
    </dl>
  );
}

export function ShortcutsOverlay({ onClose }: { onClose(): void }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    ref.current?.focus();
    return () => prev?.focus?.();
  }, []);
  return (
    <div className="overlay" onClick={onClose}>
      <div
        className="dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="shortcuts-title"
        tabIndex={-1}
        ref={ref}
        onClick={(e) => e.stopPropagation()}
      >
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <ShortcutList className="shortcuts" />
        <p className="muted">Shortcuts are ignored while you type in a field.</p>
        <button onClick={onClose}>Close</button>
      </div>
    </div>
  );
}
