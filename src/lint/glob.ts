// gitignore-flavoured globs for `exclude` and `per-file-ignores`, matched without backtracking.
//
// A regular expression such as `^(?:.*/)?[^/]*a[^/]*a...b$` backtracks exponentially on a path that
// almost matches (`*a*a*a*a*a*a*a*a*a*a*a*a*b` against 36 `a`s takes minutes), and the pattern comes
// from a repository the user may have just cloned. Here a glob compiles to a list of tokens and is
// run as an NFA simulation: the set of live token positions advances one path character at a time,
// so a match costs at most (tokens + 1) steps per character, whatever the pattern.
//
// Semantics (unchanged from the former RegExp translation):
//   `**/`  zero or more whole folders          `**`  anything, `/` included
//   `*`    anything within one path segment     `?`   one character other than `/`
//   a leading `./` is dropped; every other character is literal (no `[...]` classes).
//   A glob without `/` matches at any depth; every glob also matches everything below what it
//   matches (`scripts` matches `scripts/run.py`), as ruff and gitignore do.

type Token =
  | { readonly kind: 'char'; readonly ch: string }
  | { readonly kind: 'one' } // ?
  | { readonly kind: 'star' } // *
  | { readonly kind: 'globstar' } // ** not followed by /
  | { readonly kind: 'dirs' } // **/ : empty or anything ending with /; always followed by:
  | { readonly kind: 'dirsInner' }; // inside a non-empty `**/`, before its closing /

/** Counts the simulation's work, for tests that check the cost stays linear. */
export interface GlobStats {
  steps: number;
}

export interface GlobMatcher {
  readonly glob: string;
  test(path: string, stats?: GlobStats): boolean;
}

function tokenize(glob: string): Token[] {
  const g = glob.replace(/^\.\//, '');
  const tokens: Token[] = [];
  // A glob without a slash matches at any depth: an implicit leading `**/`.
  if (!g.includes('/')) tokens.push({ kind: 'dirs' }, { kind: 'dirsInner' });
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === '*') {
      if (g[i + 1] === '*') {
        i++;
        if (g[i + 1] === '/') {
          i++;
          tokens.push({ kind: 'dirs' }, { kind: 'dirsInner' });
        } else tokens.push({ kind: 'globstar' });
      } else if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' }); // `**`-free runs of `*` are one `*`
    } else if (ch === '?') tokens.push({ kind: 'one' });
    else tokens.push({ kind: 'char', ch });
  }
  return tokens;
}

export function compileGlob(glob: string): GlobMatcher {
  const tokens = tokenize(glob);
  const n = tokens.length;
  // Live states are token indexes 0..n; n means "the whole glob has matched so far".
  let current = new Uint8Array(n + 1);
  let next = new Uint8Array(n + 1);

  /**
   * Adds state i and everything reachable from it without consuming a character: `*` and `**` may
   * match nothing, and an empty globstar-slash skips its inner state too. Each state is added once per set.
   */
  const close = (set: Uint8Array, from: number, stats: GlobStats | undefined): void => {
    let i = from;
    while (i <= n && set[i] === 0) {
      set[i] = 1;
      if (stats) stats.steps++;
      const kind = tokens[i]?.kind;
      if (kind === 'star' || kind === 'globstar') i += 1;
      else if (kind === 'dirs') i += 2;
      else break;
    }
  };

  const test = (path: string, stats?: GlobStats): boolean => {
    current.fill(0);
    close(current, 0, stats);
    for (let p = 0; p < path.length; p++) {
      const c = path[p];
      // `(?:/.*)?` after a full match: everything below a matched folder matches too.
      if (current[n] === 1 && c === '/') return true;
      next.fill(0);
      let alive = false;
      for (let i = 0; i < n; i++) {
        if (current[i] === 0) continue;
        if (stats) stats.steps++;
        const t = tokens[i];
        switch (t.kind) {
          case 'char':
            if (t.ch === c) close(next, i + 1, stats);
            break;
          case 'one':
            if (c !== '/') close(next, i + 1, stats);
            break;
          case 'star':
            if (c !== '/') close(next, i, stats);
            break;
          case 'globstar':
            close(next, i, stats);
            break;
          case 'dirs': // the first character of a non-empty `**/`
          case 'dirsInner':
            close(next, t.kind === 'dirs' ? i + 1 : i, stats);
            if (c === '/') close(next, t.kind === 'dirs' ? i + 2 : i + 1, stats);
            break;
        }
      }
      for (let i = 0; i <= n; i++) if (next[i] === 1) alive = true;
      if (!alive) return false;
      [current, next] = [next, current];
    }
    return current[n] === 1;
  };
  return { glob, test };
}
