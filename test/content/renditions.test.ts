/**
 * Renditions: the default web-sized image and thumbnail of images and PDFs, renditions of an
 * asked size made on demand, signed absolute URLs that decode as images of that size, the
 * official client's listRenditions / getRendition, and renditions deleted with their object.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { createObject, makeDocx, makePdf, makePng, processed } from './helpers.ts';

const decode = async (url: string) => {
  assert.match(url, /^https?:\/\/[^/]+\/.+[?&]sig=/, `an absolute signed URL: ${url}`);
  const res = await fetch(url);
  assert.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  return { type: res.headers.get('content-type'), ...(await sharp(bytes).metadata()) };
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: renditions`, () => {
    let srv: TestServer;
    let image: string;
    let pdf: string;
    before(async () => {
      srv = await startTestServer(dialect);
      image = await createObject(srv, 'wide.png', await makePng(2400, 1600));
      pdf = await createObject(srv, 'paper.pdf', await makePdf(2));
    });
    after(() => srv.close());

    it('an image gets a web-sized rendition and a thumbnail, recorded in metadata and listed as records', async () => {
      const obj = await processed(srv, image);
      assert.equal(obj.status, 'ready');
      const byName = Object.fromEntries(obj.metadata.renditions.map((r: any) => [r.name, r]));
      assert.deepEqual(byName.web.dimensions, { width: 1024, height: 683 });
      assert.deepEqual(byName.thumbnail.dimensions, { width: 256, height: 171 });
      assert.equal(byName.web.content.type, 'image/jpeg');
      // The storage URI of a rendition turns into a download URL like any file's.
      const dl = await srv.api('POST', '/api/v1/objects/download-url', { file: byName.thumbnail.content.source });
      assert.equal(dl.status, 200);
      const thumb = await decode(dl.body.url);
      assert.equal(thumb.format, 'jpeg');
      assert.equal(thumb.width, 256);

      const list = await srv.client().objects.listRenditions(image);
      assert.equal(list.length, 2);
      for (const r of list as any[]) {
        assert.deepEqual(r.parent, { id: image, name: 'wide.png' });
        assert.equal(r.status, 'ready');
        assert.equal(r.content.type, 'image/jpeg');
        assert.equal(r.metadata.type, 'image');
      }
      assert.deepEqual(
        list.map((r: any) => r.properties.max_hw).sort((a: number, b: number) => a - b),
        [256, 1024],
      );
    });

    it('GET /renditions/jpeg answers the stored renditions as signed URLs that decode as images', async () => {
      await processed(srv, image);
      const all = await srv.api('GET', `/api/v1/objects/${image}/renditions/jpeg`);
      assert.equal(all.status, 200);
      assert.equal(all.body.status, 'found');
      assert.equal(all.body.renditions.length, 2);
      const sizes = await Promise.all(all.body.renditions.map(decode));
      assert.deepEqual(
        sizes.map((s) => Math.max(s.width!, s.height!)),
        [1024, 256],
        'largest first',
      );
      const one = await srv.api('GET', `/api/v1/objects/${image}/renditions/jpeg?max_hw=256`);
      assert.equal(one.body.renditions.length, 1);
      assert.equal((await decode(one.body.renditions[0])).width, 256);
    });

    it('a size asked for is made on demand: generate_if_missing + block_on_generation, through the official client', async () => {
      await processed(srv, image);
      const missing = await srv.api('GET', `/api/v1/objects/${image}/renditions/webp?max_hw=300`);
      assert.equal(missing.status, 404);
      assert.match(missing.body.message, /generate_if_missing/);
      const client = srv.client();
      const got = await client.objects.getRendition(image, {
        format: 'webp' as any,
        max_hw: 300,
        generate_if_missing: true,
        block_on_generation: true,
      });
      assert.equal(got.status, 'found');
      const webp = await decode(got.renditions![0]);
      assert.equal(webp.format, 'webp');
      assert.equal(webp.width, 300);
      assert.equal(webp.height, 200);
      // Without blocking: generating first, found later.
      const first = await srv.api('GET', `/api/v1/objects/${image}/renditions/png?max_hw=120&generate_if_missing=true`);
      assert.equal(first.body.status, 'generating');
      let later = first;
      for (let i = 0; i < 200 && later.body.status !== 'found'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        later = await srv.api('GET', `/api/v1/objects/${image}/renditions/png?max_hw=120`);
      }
      assert.equal(later.body.status, 'found');
      const png = await decode(later.body.renditions[0]);
      assert.equal(png.format, 'png');
      assert.equal(png.width, 120);
      assert.equal(png.height, 80);
    });

    it('a PDF gets an image of its first page', async () => {
      const obj = await processed(srv, pdf);
      assert.equal(obj.status, 'ready');
      const web = obj.metadata.renditions.find((r: any) => r.name === 'web');
      assert.equal(web.dimensions.height, 1024, 'an A4 page fitted in 1024');
      assert.ok(Math.abs(web.dimensions.width - (1024 * 595) / 842) < 1, `width ${web.dimensions.width}`);
      const got = await srv.api(
        'GET',
        `/api/v1/objects/${pdf}/renditions/png?max_hw=500&generate_if_missing=true&block_on_generation=true`,
      );
      assert.equal(got.body.status, 'found');
      const img = await decode(got.body.renditions[0]);
      assert.equal(img.height, 500);
      // The page is drawn, not blank: its pixels are not all white.
      const stats = await sharp(Buffer.from(await (await fetch(got.body.renditions[0])).arrayBuffer())).stats();
      assert.ok(stats.channels[0].min < 128, 'text was drawn on the page');
    });

    it('documents without a renderer and unknown formats are clear 4xx, not 500', async () => {
      const docx = await createObject(srv, 'x.docx', await makeDocx());
      await processed(srv, docx);
      const r = await srv.api('GET', `/api/v1/objects/${docx}/renditions/jpeg?generate_if_missing=true`);
      assert.equal(r.status, 400);
      assert.match(r.body.message, /images and PDFs/);
      assert.equal((await srv.api('GET', `/api/v1/objects/${image}/renditions/gif`)).status, 400);
      assert.equal((await srv.api('GET', `/api/v1/objects/${image}/renditions/jpeg?max_hw=0`)).status, 400);
      assert.equal((await srv.api('GET', '/api/v1/objects/nope/renditions/jpeg')).status, 404);
      assert.equal((await srv.api('GET', '/api/v1/objects/nope/renditions')).status, 404);
    });

    it('renditions are deleted with their object', async () => {
      const id = await createObject(srv, 'gone.png', await makePng(800, 600));
      await processed(srv, id);
      const got = await srv.api(
        'GET',
        `/api/v1/objects/${id}/renditions/jpeg?max_hw=100&generate_if_missing=true&block_on_generation=true`,
      );
      assert.equal(got.body.status, 'found');
      const folder = join(srv.dataDir, 'blobs', srv.orrery.bootstrap.project.id, '.orrery', 'renditions', id);
      assert.deepEqual(readdirSync(folder).sort(), ['jpeg-100.jpg', 'thumbnail.jpg', 'web.jpg']);
      const urls = got.body.renditions as string[];
      assert.equal((await srv.api('DELETE', `/api/v1/objects/${id}`)).status, 200);
      for (let i = 0; i < 100 && existsSync(folder); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(existsSync(folder), false, 'the rendition files are gone');
      assert.equal((await fetch(urls[0])).status, 404, 'and their URLs answer 404');
    });
  });
}
