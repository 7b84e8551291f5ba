import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from './helpers.ts';
import { parseCsv } from '../support/csv.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: export of objects as CSV and JSON`, () => {
    let srv: TestServer;
    let tricky: any;
    let plain: any;
    let typeId: string;

    before(async () => {
      srv = await startTestServer(dialect);
      typeId = (
        await srv.api('POST', '/api/v1/types', {
          name: 'Contract',
          table_layout: [
            { field: 'name', name: 'Title' },
            { field: 'properties.amount', name: 'Amount', type: 'number' },
            { field: 'properties.party', name: 'Party', fallback: 'properties.customer', default: 'n/a' },
          ],
        })
      ).body.id;
      await srv.api('POST', '/api/v1/types', { name: 'Bare' });
      tricky = (
        await srv.api('POST', '/api/v1/objects', {
          name: '=HYPERLINK("http://evil","x")',
          description: 'has, commas and "quotes"\nand a newline',
          type: typeId,
          tags: ['a', 'b'],
          properties: { amount: -5, party: '+cmd', note: '@at' },
        })
      ).body;
      plain = (
        await srv.api('POST', '/api/v1/objects', {
          name: 'Plain',
          properties: { amount: 12.5, customer: 'ACME' },
          type: typeId,
        })
      ).body;
    });
    after(() => srv.close());

    it('exports CSV with a header, RFC 4180 quoting, CRLF, default columns and escaped formulas', async () => {
      const r = await srv.api('POST', '/api/v1/objects/export', { objectIds: [tricky.id, plain.id], type: 'CSV' });
      assert.equal(r.status, 200);
      assert.equal(r.body.type, 'text/csv');
      assert.match(r.body.name, /^Default-project-\d{8}T\d{6}Z\.csv$/);
      const rows = parseCsv(r.body.data);
      assert.deepEqual(rows[0], [
        'id',
        'name',
        'description',
        'type',
        'status',
        'location',
        'parent',
        'external_id',
        'content_name',
        'content_type',
        'tags',
        'properties',
        'created_at',
        'updated_at',
      ]);
      assert.equal(rows.length, 3);
      const [, first, second] = rows;
      assert.equal(first[0], tricky.id, 'in the order asked');
      assert.equal(first[1], `'=HYPERLINK("http://evil","x")`, 'a formula is escaped');
      assert.equal(first[2], 'has, commas and "quotes"\nand a newline');
      assert.equal(first[3], 'Contract');
      assert.equal(first[4], 'created');
      assert.equal(first[10], '["a","b"]');
      assert.deepEqual(JSON.parse(first[11]), { amount: -5, party: '+cmd', note: '@at' });
      assert.equal(second[1], 'Plain');
      assert.ok(
        r.body.data.includes('"has, commas and ""quotes""\nand a newline"'),
        'quotes doubled inside a quoted field',
      );
      assert.ok(r.body.data.includes('\r\n'));
    });

    it('takes columns from a table_layout (dotted paths, fallback, default) or from a type layout', async () => {
      const inline = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: [tricky.id, plain.id],
        type: 'csv',
        table_layout: [
          { field: 'name', name: 'Name' },
          { field: 'properties.amount', name: 'Amount' },
          { field: 'properties.note', name: 'Note', default: '-' },
          { field: 'properties.party', name: 'Party' },
        ],
      });
      assert.deepEqual(parseCsv(inline.body.data), [
        ['Name', 'Amount', 'Note', 'Party'],
        [`'=HYPERLINK("http://evil","x")`, '-5', "'@at", "'+cmd"],
        ['Plain', '12.5', "'-", ''],
      ]);
      for (const layout of [typeId, 'Contract']) {
        const byType = await srv.api('POST', '/api/v1/objects/export', {
          objectIds: [plain.id, tricky.id],
          type: 'csv',
          layout,
        });
        assert.deepEqual(
          parseCsv(byType.body.data),
          [
            ['Title', 'Amount', 'Party'],
            ['Plain', '12.5', 'ACME'],
            [`'=HYPERLINK("http://evil","x")`, '-5', "'+cmd"],
          ],
          `layout ${layout}`,
        );
      }
    });

    it('exports JSON (any case): full records, or rows keyed by the layout columns', async () => {
      const client = srv.client();
      const full = await client.objects.exportProperties({ objectIds: [plain.id], type: 'Json' } as any);
      assert.equal(full.type, 'application/json');
      assert.match(full.name, /\.json$/);
      const records = JSON.parse(full.data);
      assert.equal(records.length, 1);
      assert.equal(records[0].id, plain.id);
      assert.deepEqual(records[0].properties, { amount: 12.5, customer: 'ACME' });
      assert.deepEqual(records[0].type, { id: typeId, name: 'Contract', ref_type: 'stored' });
      const shaped = await client.objects.exportProperties({
        objectIds: [plain.id, tricky.id],
        type: 'json',
        table_layout: [
          { field: 'name', name: 'n' },
          { field: 'properties.customer', name: 'c' },
        ],
      } as any);
      assert.deepEqual(JSON.parse(shaped.data), [
        { n: 'Plain', c: 'ACME' },
        { n: '=HYPERLINK("http://evil","x")', c: null },
      ]);
      const empty = await client.objects.exportProperties({ objectIds: ['nothing-here'], type: 'JSON' } as any);
      assert.deepEqual(JSON.parse(empty.data), []);
    });

    it('refuses bad exports: type, layout', async () => {
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/export', { objectIds: [plain.id], type: 'xlsx' })).status,
        400,
      );
      assert.equal((await srv.api('POST', '/api/v1/objects/export', { objectIds: [plain.id] })).status, 400);
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/export', { objectIds: [plain.id], type: 'csv', layout: 'nope' }))
          .status,
        404,
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/export', { objectIds: [plain.id], type: 'csv', layout: 'Bare' }))
          .status,
        400,
      );
      assert.equal(
        (
          await srv.api('POST', '/api/v1/objects/export', {
            objectIds: [plain.id],
            type: 'csv',
            table_layout: [{ name: 'x' }],
          })
        ).status,
        400,
      );
      assert.equal(
        (
          await srv.api('POST', '/api/v1/objects/export', {
            objectIds: [],
            type: 'csv',
            query: { createdFrom: 'someday' },
          })
        ).status,
        400,
      );
      assert.equal(
        (
          await srv.api('POST', '/api/v1/objects/export', {
            objectIds: [],
            type: 'csv',
            query: { match: { x: { $nope: 1 } } },
          })
        ).status,
        400,
      );
    });

    it("never exports another project's objects", async () => {
      const other = await secondProject(srv);
      const r = await srv.api(
        'POST',
        '/api/v1/objects/export',
        { objectIds: [plain.id, tricky.id], type: 'json' },
        other.key,
      );
      assert.deepEqual(JSON.parse(r.body.data), []);
      const all = await srv.api('POST', '/api/v1/objects/export', { objectIds: [], type: 'json' }, other.key);
      assert.deepEqual(JSON.parse(all.body.data), []);
    });

    it('exports thousands of objects, page by page, by ids or by query', async () => {
      const n = 1234;
      const created: string[] = [];
      for (let i = 0; i < n; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, n - i) }, (_, j) =>
            srv.api('POST', '/api/v1/objects', {
              name: `bulk ${i + j}`,
              location: '/bulk',
              properties: { i: i + j, even: (i + j) % 2 === 0 },
            }),
          ),
        );
        for (const r of batch) {
          assert.equal(r.status, 200);
          created.push(r.body.id);
        }
      }
      const byQuery = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: [],
        type: 'csv',
        query: { location: '/bulk' },
        table_layout: [
          { field: 'id', name: 'id' },
          { field: 'properties.i', name: 'i' },
        ],
      });
      const rows = parseCsv(byQuery.body.data);
      assert.equal(rows.length, n + 1);
      // Newest first (updated_at desc, id desc), nothing lost or repeated across pages.
      const expected = [...created].sort().reverse();
      assert.deepEqual(
        rows.slice(1).map((r) => r[0]),
        expected,
      );
      const matched = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: [],
        type: 'json',
        query: { location: '/bulk', match: { 'properties.even': true } },
      });
      assert.equal(JSON.parse(matched.body.data).length, n / 2);
      const shuffled = [...created].reverse();
      const byIds = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: shuffled,
        type: 'json',
        table_layout: [{ field: 'id', name: 'id' }],
      });
      assert.deepEqual(
        JSON.parse(byIds.body.data).map((r: any) => r.id),
        shuffled,
      );
    });
  });
}
