/**
 * Where sign-in may send the user afterwards: only a path of this origin. Parsing with URL (not a
 * prefix check) is what catches `//evil`, `/\evil` and tabs or newlines, which browsers all read as
 * another host. Returns the path, search and hash to navigate to, or undefined.
 */
export function sameOriginRedirect(raw: unknown, origin: string): string | undefined {
  if (typeof raw !== 'string' || !raw.startsWith('/')) return undefined;
  let url: URL;
  try {
    url = new URL(raw, origin);
  } catch {
    return undefined;
  }
  if (url.origin !== new URL(origin).origin) return undefined;
  if (url.pathname.startsWith('/signin')) return undefined;
  return url.pathname + url.search + url.hash;
}
