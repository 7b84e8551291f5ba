/** Unit tests: the built-in embedder, chunking, fusion, the partition index and the filtered search. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HashedNgramsEmbedder, HASHED_NGRAMS_MODEL } from '../../src/embeddings/hashed-ngrams.ts';
import { chunkText, embedLong } from '../../src/embeddings/chunking.ts';
import { fuse } from '../../src/embeddings/fusion.ts';
import { loadConfig } from '../../src/config.ts';
import { PartitionIndex, searchExpansion } from '../../src/embeddings/vector-index.ts';
import { filteredSearch } from '../../src/embeddings/filtered-search.ts';
import { decodeVector, dot, encodeVector, normalise } from '../../src/embeddings/vectors.ts';
import { objectSources, sourceEtag } from '../../src/embeddings/sources.ts';
import type { Embedder } from '../../src/embeddings/embedder.ts';

const e = new HashedNgramsEmbedder();
const sim = (a: string, b: string) => dot(e.embedNow(a), e.embedNow(b));

function randomUnit(dims: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const v = Float32Array.from({ length: dims }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  });
  normalise(v);
  return v;
}

describe('the built-in embedder orrery-hashed-ngrams-384', () => {
  it('answers 384 normalised numbers, the same for the same text, and nothing for no words', () => {
    assert.equal(e.model, HASHED_NGRAMS_MODEL);
    const v = e.embedNow('Jupiter and its moons');
    assert.equal(v.length, 384);
    assert.ok(Math.abs(dot(v, v) - 1) < 1e-5);
    assert.deepEqual(Array.from(e.embedNow('Jupiter and its moons')), Array.from(v));
    assert.ok(
      e.embedNow('  , . !! ').every((x) => x === 0),
      'punctuation only: a zero vector (not stored)',
    );
    assert.ok(
      e.embedNow('the and of').every((x) => x === 0),
      'stop words only',
    );
  });

  it('is case-insensitive, and near-duplicates > same topic > unrelated', () => {
    assert.ok(sim('SOURDOUGH Bread', 'sourdough bread') > 0.999);
    const dup = sim('Bake sourdough bread at home with a starter', 'Baking sourdough bread at home with the starter');
    const topic = sim('Bake sourdough bread at home with a starter', 'Knead the dough and bake a crusty loaf of bread');
    const other = sim('Bake sourdough bread at home with a starter', 'Bond yields rose and stock markets fell');
    assert.ok(dup > 0.75, `near-duplicate ${dup}`);
    assert.ok(topic > 0.15 && topic < dup, `topic ${topic}`);
    assert.ok(Math.abs(other) < 0.15, `unrelated ${other}`);
    assert.ok(sim('embedding vectors', 'embeddings vector') > 0.4, 'word forms share character trigrams');
  });

  // Its cost per text (the run hot path) is measured by `npm run bench -- embedder`.
});

describe('chunking and sources', () => {
  it('cuts long texts at paragraph or sentence ends, within the limit, at most MAX_CHUNKS chunks', () => {
    const para = 'One sentence here. Another sentence follows it. '.repeat(10);
    const text = `${para}\n\n${para}\n\n${para}`;
    const chunks = chunkText(text, 400);
    assert.ok(chunks.length > 3);
    assert.ok(chunks.every((c) => c.length <= 400));
    assert.ok(
      chunks.every((c) => /[.]$/.test(c)),
      'every chunk ends at a sentence end',
    );
    assert.equal(chunkText('x '.repeat(10_000), 100, 5).length, 5);
  });

  it('combines chunk vectors into one normalised vector per text (length-weighted mean)', async () => {
    const calls: string[][] = [];
    const fake: Embedder = {
      model: 'fake',
      dimensions: 2,
      supportsImages: false,
      maxInputChars: 10,
      embed: async (texts) => {
        calls.push(texts);
        return texts.map((t) => (t.startsWith('a') ? Float32Array.of(1, 0) : Float32Array.of(0, 1)));
      },
    };
    const [v, none] = await embedLong(fake, ['aaaa aaaa bbbb bbbb', '   ']);
    assert.deepEqual(calls, [['aaaa aaaa', 'bbbb bbbb']]);
    assert.ok(Math.abs(v![0] - Math.SQRT1_2) < 1e-6 && Math.abs(v![1] - Math.SQRT1_2) < 1e-6);
    assert.equal(none, null);
  });

  it('text falls back to name and description; properties become sorted path: value lines', () => {
    assert.equal(objectSources({ name: 'N', description: 'D', text: null }).text, 'N\nD');
    assert.equal(objectSources({ name: 'N', text: 'body' }).text, 'body');
    assert.equal(
      objectSources({ properties: { b: 1, a: { y: [1, 2], x: 'v' } } }).properties,
      'a.x: v\na.y: 1, 2\nb: 1',
    );
    assert.equal(objectSources({ properties: {} }).properties, null);
    assert.equal(sourceEtag('a'), sourceEtag('a'));
    assert.notEqual(sourceEtag('a'), sourceEtag('b'));
  });

  it('vectors round-trip through their byte encoding, even from an unaligned buffer', () => {
    const v = Float32Array.of(0.25, -1.5, 3);
    const bytes = encodeVector(v);
    const unaligned = Buffer.concat([Buffer.from([9]), bytes]).subarray(1);
    assert.deepEqual(Array.from(decodeVector(unaligned)), [0.25, -1.5, 3]);
  });
});

describe('fusion of ranked lists', () => {
  const a = {
    name: 'text',
    weight: 1,
    hits: [
      { id: 'x', score: 0.9 },
      { id: 'y', score: 0.8 },
      { id: 'z', score: 0.1 },
    ],
  };
  const b = {
    name: 'full_text',
    weight: 1,
    hits: [
      { id: 'y', score: 5 },
      { id: 'z', score: 4 },
    ],
  };

  it('rrf: Σ w / (60 + rank); items in both lists rise', () => {
    const out = fuse([a, b], 'rrf');
    assert.deepEqual(
      out.map((h) => h.id),
      ['y', 'z', 'x'],
    );
    assert.ok(Math.abs(out[0].score - (1 / 62 + 1 / 61)) < 1e-12);
  });

  it('rsf: min-max scaled scores, weighted mean; one list alone keeps its own scores; weight 0 drops a list', () => {
    const out = fuse([a, b], 'rsf');
    assert.deepEqual(
      out.map((h) => h.id),
      ['y', 'x', 'z'],
    );
    assert.ok(Math.abs(out[0].score - (0.875 + 1) / 2) < 1e-9);
    assert.ok(out.every((h) => h.score >= 0 && h.score <= 1));
    assert.deepEqual(fuse([a], 'rrf'), a.hits);
    assert.deepEqual(
      fuse([a, { ...b, weight: 0 }], 'rsf').map((h) => h.id),
      ['x', 'y', 'z'],
    );
  });
});

describe('the partition index and the filtered search', () => {
  const dims = 32;
  const vectors = Array.from({ length: 300 }, (_, i) => randomUnit(dims, i + 1));

  it('scans exactly below the threshold; upserts and removals are seen at once', async () => {
    const index = new PartitionIndex(dims, 10_000);
    vectors.forEach((v, i) => index.upsert(`o${i}`, v));
    assert.equal(index.mode, 'exact');
    const hits = await index.nearest(vectors[7], 3);
    assert.equal(hits[0].ownerId, 'o7');
    assert.ok(Math.abs(hits[0].score - 1) < 1e-5);
    index.remove('o7');
    assert.ok(!(await index.nearest(vectors[7], 3)).some((h) => h.ownerId === 'o7'));
    index.upsert('o8', vectors[7]);
    assert.equal((await index.nearest(vectors[7], 1))[0].ownerId, 'o8');
    assert.throws(() => index.upsert('bad', new Float32Array(3)));
  });

  it('builds an HNSW graph in a worker past the threshold, keeps writes made during the build, and agrees with the exact scan', async () => {
    const index = new PartitionIndex(dims, 100);
    vectors.slice(0, 150).forEach((v, i) => index.upsert(`o${i}`, v));
    // Writes while the worker builds: posted to it, applied right after the build.
    vectors.slice(150).forEach((v, i) => index.upsert(`o${150 + i}`, v));
    index.remove('o3');
    await index.ready();
    assert.equal(index.mode, 'hnsw');
    assert.equal(index.size, 299);
    let agree = 0;
    for (let q = 0; q < 50; q++) {
      const query = randomUnit(dims, 10_000 + q);
      const exact = new Set(index.scan(query, 10).map((h) => h.ownerId));
      agree += (await index.nearest(query, 10)).filter((h) => exact.has(h.ownerId)).length;
    }
    assert.ok(agree / 500 > 0.95, `recall ${agree / 500}`);
    assert.ok(!(await index.nearest(vectors[3], 5)).some((h) => h.ownerId === 'o3'));
    index.upsert('o4', vectors[3]);
    assert.equal((await index.nearest(vectors[3], 1))[0].ownerId, 'o4', 'an update after the build moves the node');
    // The graph answers in its worker: a slot freed and given to another owner meanwhile is not
    // answered as that owner (with the score of the vector it held).
    const pending = index.nearest(vectors[7], 3);
    index.remove('o7');
    index.upsert('newcomer', vectors[250]);
    const answered = await pending;
    assert.ok(!answered.some((h) => h.ownerId === 'newcomer' || h.ownerId === 'o7'));
    assert.equal(answered.length, 3, 'the freed slot is skipped and the next best takes its place');
    assert.equal(
      (await index.nearest(vectors[250], 2))
        .map((h) => h.ownerId)
        .sort()
        .join(),
      'newcomer,o250',
    );
    index.close();
    assert.equal((await index.nearest(vectors[9], 1))[0].ownerId, 'o9', 'a closed index still answers, exactly');
  });

  it('a graph search widens its candidate list (ef) as the partition grows past 100,000 vectors', () => {
    assert.equal(searchExpansion(5_000, 128), 128);
    assert.equal(searchExpansion(100_000, 128), 128);
    assert.equal(searchExpansion(1_000_000, 128), 405);
    assert.ok(searchExpansion(300_000, 128) > 128 && searchExpansion(300_000, 128) < 405);
    assert.equal(searchExpansion(1_000_000, 64), 203, 'in proportion to the configured ef');
    assert.equal(loadConfig({}).vectorEfSearch, 128);
    assert.equal(loadConfig({ ORRERY_VECTOR_EF_SEARCH: '256' }).vectorEfSearch, 256);
    assert.throws(() => loadConfig({ ORRERY_VECTOR_EF_SEARCH: '5' }), /ORRERY_VECTOR_EF_SEARCH/);
  });

  it('a small candidate set is scored exactly; a broad filter widens until k pass; the source is excluded', async () => {
    const index = new PartitionIndex(dims, 10_000);
    vectors.forEach((v, i) => index.upsert(`o${i}`, v));
    const odd = (id: string) => Number(id.slice(1)) % 2 === 1;
    const small = await filteredSearch({
      index,
      query: vectors[10],
      k: 5,
      exclude: 'o10',
      exactLimit: 1000,
      filter: {
        all: async () => ['o1', 'o3', 'o10', 'o99'],
        accept: async () => {
          throw new Error('not called');
        },
      },
    });
    assert.equal(small.strategy, 'exact-candidates');
    assert.deepEqual(new Set(small.hits.map((h) => h.ownerId)), new Set(['o1', 'o3', 'o99']));
    let asked = 0;
    const broad = await filteredSearch({
      index,
      query: vectors[10],
      k: 20,
      exclude: 'o11',
      exactLimit: 10,
      filter: {
        all: async () => null,
        accept: async (ids) => {
          asked++;
          return new Set(ids.filter(odd));
        },
      },
    });
    assert.equal(broad.strategy, 'index-widening');
    assert.equal(broad.hits.length, 20);
    assert.ok(broad.hits.every((h) => odd(h.ownerId) && h.ownerId !== 'o11'));
    // The same as filtering the exact order of everything.
    const truth = index
      .scan(vectors[10], 300)
      .filter((h) => odd(h.ownerId) && h.ownerId !== 'o11')
      .slice(0, 20);
    assert.deepEqual(
      broad.hits.map((h) => h.ownerId),
      truth.map((h) => h.ownerId),
    );
    assert.ok(asked >= 1);
    // Only 3 pass in the whole index: widening ends with a scan of everything, and answers the 3.
    const rare = await filteredSearch({
      index,
      query: vectors[10],
      k: 10,
      exactLimit: 1,
      filter: {
        all: async () => null,
        accept: async (ids) => new Set(ids.filter((i) => ['o5', 'o250', 'o299'].includes(i))),
      },
    });
    assert.equal(rare.strategy, 'exact-scan');
    assert.deepEqual(new Set(rare.hits.map((h) => h.ownerId)), new Set(['o5', 'o250', 'o299']));
  });
});
