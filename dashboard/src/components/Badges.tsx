import { BADGE_MEANING } from "../badges.ts";

export function Badge({ name, detail }: { name: string; detail?: string }) {
  const meaning = BADGE_MEANING[name] ?? "";
  const cls = "badge badge-" + name.toLowerCase().replace(/[^a-z]+/g, "-");
  return (
    <span className={cls} title={meaning + (detail ? ` (${detail})` : "")} aria-label={`${name}: ${meaning}`}>
      {name}
    </span>
  );
}

export function Badges({ names }: { names: Iterable<string> }) {
  const list = [...new Set(names)];
  if (!list.length) return null;
  return (
    <span className="badges" role="list" aria-label="badges">
      {list.map((b) => (
        <span role="listitem" key={b}>
          <Badge name={b} />
        </span>
      ))}
    </span>
  );
}
