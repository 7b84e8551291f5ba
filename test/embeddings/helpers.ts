/**
 * A small corpus whose right neighbours are known for the built-in (lexical) embedder: three
 * topic groups that share their topic's words, a near-duplicate pair in each group, and objects
 * in two locations so filters can be combined with similarity.
 */
import type { TestServer } from '../support/server.ts';

export interface CorpusDoc {
  key: string;
  topic: 'space' | 'bread' | 'markets';
  location: string;
  text: string;
  properties: Record<string, unknown>;
}

export const CORPUS: CorpusDoc[] = [
  {
    key: 'space1',
    topic: 'space',
    location: '/science',
    text: 'Jupiter is the largest planet of the solar system; its moons Io, Europa and Ganymede orbit the giant planet.',
    properties: { subject: 'planets', level: 'intro' },
  },
  {
    key: 'space1dup',
    topic: 'space',
    location: '/science',
    text: 'Jupiter is the largest planet in the solar system, and its moons Io, Europa and Ganymede orbit the giant planet.',
    properties: { subject: 'planets', level: 'intro' },
  },
  {
    key: 'space2',
    topic: 'space',
    location: '/science',
    text: 'Saturn is a giant planet of the solar system with bright rings; its moon Titan orbits the planet.',
    properties: { subject: 'planets', level: 'advanced' },
  },
  {
    key: 'space3',
    topic: 'space',
    location: '/archive',
    text: 'Telescopes watch planet orbits: moons of a giant planet, comets and the solar system beyond Neptune.',
    properties: { subject: 'telescopes', level: 'advanced' },
  },
  {
    key: 'bread1',
    topic: 'bread',
    location: '/kitchen',
    text: 'Bake sourdough bread at home: feed the starter with flour and water, knead the dough, and bake the loaf hot.',
    properties: { subject: 'baking', level: 'intro' },
  },
  {
    key: 'bread1dup',
    topic: 'bread',
    location: '/kitchen',
    text: 'Baking sourdough bread at home: feed the starter with flour and water, knead the dough and bake the loaf hot.',
    properties: { subject: 'baking', level: 'intro' },
  },
  {
    key: 'bread2',
    topic: 'bread',
    location: '/kitchen',
    text: 'A rye bread dough needs a lively sourdough starter, more water than flour, and a long bake of the loaf.',
    properties: { subject: 'baking', level: 'advanced' },
  },
  {
    key: 'bread3',
    topic: 'bread',
    location: '/archive',
    text: 'Knead the dough gently; flour, water, salt and starter make a crusty sourdough loaf of bread.',
    properties: { subject: 'baking', level: 'advanced' },
  },
  {
    key: 'markets1',
    topic: 'markets',
    location: '/finance',
    text: 'Stock markets fell as bond yields rose; investors sold shares of banks and the index closed lower.',
    properties: { subject: 'stocks', level: 'intro' },
  },
  {
    key: 'markets1dup',
    topic: 'markets',
    location: '/finance',
    text: 'Stock markets fell when bond yields rose: investors sold shares of banks, and the index closed lower.',
    properties: { subject: 'stocks', level: 'intro' },
  },
  {
    key: 'markets2',
    topic: 'markets',
    location: '/finance',
    text: 'Investors bought bond funds while stock markets and bank shares swung; yields and the index moved.',
    properties: { subject: 'bonds', level: 'advanced' },
  },
  {
    key: 'markets3',
    topic: 'markets',
    location: '/archive',
    text: 'The index of stock markets: shares, bond yields and investors in banks over a decade.',
    properties: { subject: 'stocks', level: 'advanced' },
  },
];

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates the corpus (objects with text, no file) and waits until every text vector exists. */
export async function seedCorpus(srv: TestServer, token?: string): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const d of CORPUS) {
    const r = await srv.api(
      'POST',
      '/api/v1/objects',
      { name: d.key, text: d.text, location: d.location, properties: d.properties, tags: [d.topic] },
      token,
    );
    if (r.status !== 200) throw new Error(`create ${d.key}: ${r.status} ${JSON.stringify(r.body)}`);
    ids[d.key] = r.body.id;
  }
  await waitForEmbeddings(srv, CORPUS.length, 'text', token);
  return ids;
}

/** Polls GET /embeddings/:type/status until `n` objects have a vector and no embedding work is left. */
export async function waitForEmbeddings(
  srv: TestServer,
  n: number,
  type = 'text',
  token?: string,
  model?: string,
): Promise<any> {
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await srv.api('GET', `/api/v1/embeddings/${type}/status`, undefined, token);
    if (r.status !== 200) throw new Error(`status: ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body.objectsWithEmbeddings >= n && r.body.embeddingRunsInProgress === 0 && (!model || r.body.model === model))
      return r.body;
    if (Date.now() > until) throw new Error(`embeddings not ready: ${JSON.stringify(r.body)}`);
    await sleep(50);
  }
}

export const keysOf = (ids: Record<string, string>) => {
  const byId = new Map(Object.entries(ids).map(([k, v]) => [v, k]));
  return (items: Array<{ id?: string }>) => items.map((o) => byId.get(o.id!) ?? o.id);
};
