/**
 * `String.prototype.replace`/`replaceAll` with a string pattern, done by hand so that the result
 * length is checked while it is built: with `$\``/`$'` in the replacement a native call can grow
 * quadratically before any check could run. Semantics follow JavaScript's GetSubstitution for a
 * string pattern (no capture groups): `$$`, `$&`, `$\``, `$'`; any other `$` is literal.
 */
import type { JstRuntime } from './jst-values.ts';

export function replaceString(s: string, pattern: string, replacement: string, all: boolean, rt: JstRuntime): string {
  const step = Math.max(pattern.length, 1);
  let out = '';
  let last = 0;
  for (let at = s.indexOf(pattern); at !== -1; at = s.indexOf(pattern, at + step)) {
    const before = out.length;
    out += s.slice(last, at);
    out = substitute(out, s, at, pattern, replacement, rt);
    last = at + pattern.length;
    rt.charge(1 + ((out.length - before) >> 8));
    if (!all || at >= s.length) break;
  }
  out += s.slice(last);
  rt.checkLength(out.length);
  return out;
}

/** Appends the replacement for the match at `at` to `out`, checking the length as it grows. */
function substitute(out: string, s: string, at: number, matched: string, replacement: string, rt: JstRuntime): string {
  if (!replacement.includes('$')) {
    rt.checkLength(out.length + replacement.length);
    return out + replacement;
  }
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i];
    const next = replacement[i + 1];
    if (c !== '$' || next === undefined) {
      out += c;
    } else if (next === '$') {
      out += '$'; i++;
    } else if (next === '&') {
      out += matched; i++;
    } else if (next === '`') {
      out += s.slice(0, at); i++;
    } else if (next === "'") {
      out += s.slice(at + matched.length); i++;
    } else {
      out += c;
    }
    rt.checkLength(out.length);
  }
  return out;
}
