/** The door's resource URIs: `orrery://objects/<id>` and `orrery://runs/<id>`. */

const SCHEME = 'orrery://';
/** Ids are opaque (percent-encoded in a URI), but bounded and free of control characters. */
const ID = /^[^\u0000-\u001f]{1,200}$/;

export const objectUri = (id: string): string => `${SCHEME}objects/${encodeURIComponent(id)}`;
export const runUri = (id: string): string => `${SCHEME}runs/${encodeURIComponent(id)}`;

export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: `${SCHEME}objects/{id}`,
    name: 'Content object',
    title: 'A content object: its text, and its renditions as images',
    mimeType: 'text/plain',
  },
  {
    uriTemplate: `${SCHEME}runs/{id}`,
    name: 'Run',
    title: 'A run: its request, its result, tokens, cost and timings (JSON)',
    mimeType: 'application/json',
  },
];

export type ParsedUri = { kind: 'objects' | 'runs'; id: string };

/** What `uri` names, or a message saying what a URI of this door looks like. */
export function parseUri(uri: string): ParsedUri | string {
  const m = /^orrery:\/\/(objects|runs)\/([^/?#]+)$/.exec(uri);
  let id: string | undefined;
  try {
    id = m ? decodeURIComponent(m[2]) : undefined;
  } catch {
    id = undefined;
  }
  if (!m || !id || !ID.test(id))
    return `unknown resource URI ${JSON.stringify(uri.slice(0, 200))}: this server's resources are orrery://objects/<id> and orrery://runs/<id>`;
  return { kind: m[1] as 'objects' | 'runs', id };
}
