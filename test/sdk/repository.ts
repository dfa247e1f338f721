/**
 * The repository stands on its own: no tracked source or document points at a file outside it (a `../` path
 * that climbs above the root or names a file the repository does not have, or an absolute path into the machine
 * it was written on). Imports are checked by
 * the dependency rule (`npm run deps`); this also covers comments and Markdown links.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(".");
const TEXT = /\.(ts|tsx|js|cjs|mjs|sol|md|json)$/;
/** A relative path that starts by climbing: `../x`, `../../x/y.md`. */
const CLIMB = /(?<![\w.])((?:\.\.\/)+)([\w@.-]+(?:\/[\w@.-]+)*)/g;

function trackedTextFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-co", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  // This file holds examples of bad links on purpose.
  return out.split("\n").filter((f) => TEXT.test(f) && f !== "package-lock.json" && f !== "test/sdk/repository.ts");
}

/** `file:line: path` for every path in `file` that leaves the repository. */
export function linksOutside(file: string, text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(CLIMB)) {
      const target = path.resolve(ROOT, path.dirname(file), m[1] + m[2]);
      // Outside the root, or a path the repository does not have (e.g. a sibling folder of the checkout).
      if (path.relative(ROOT, target).startsWith("..") || !existsSync(target)) found.push(`${file}:${i + 1}: ${m[0]}`);
    }
    if (/(^|[\s("'`])\/(work|home|Users)\//.test(line)) found.push(`${file}:${i + 1}: absolute path`);
  });
  return found;
}

describe("repository: no links to files outside it", function () {
  it("finds a path that climbs out, and none that stays inside", function () {
    expect(linksOutside("agent/x.ts", "// see ../shared/STYLE.md")).to.have.length(1);
    expect(linksOutside("docs/x.md", "[d](../../DESIGN.md)")).to.have.length(1);
    expect(
      linksOutside("test/fuzz/utils/x.sol", 'import {JobEscrow} from "../../../contracts/JobEscrow.sol";'),
    ).to.deep.equal([]);
    expect(linksOutside("agent/x.ts", 'import { a } from "../sdk/rules/job.ts";')).to.deep.equal([]);
    expect(linksOutside("agent/x.ts", 'import { a } from "../sdk/nothing-here.ts";')).to.have.length(1);
    expect(linksOutside("x.md", "written in /work/main")).to.have.length(1);
  });

  it("no tracked source or document links outside the repository", function () {
    const found = trackedTextFiles().flatMap((f) => linksOutside(f, readFileSync(path.join(ROOT, f), "utf8")));
    expect(found).to.deep.equal([]);
  });
});
