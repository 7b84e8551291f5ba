/**
 * A real S3-compatible server on loopback for the tests: s3rver (it speaks the S3 REST protocol;
 * note that it does not verify signatures, so signature refusals are tested on the local store).
 * It runs inside the test process: never block the event loop (no execFileSync) while it serves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** The ORRERY_BLOB_URL that points at this server. */
  blobUrl: string;
  close(): Promise<void>;
}

export async function startS3(bucket = 'orrery-test'): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = (await server.run()) as { port: number };
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    blobUrl: `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&path_style=true`,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
