/**
 * The blobs feature: the blob store (a folder, or S3 when ORRERY_BLOB_URL names a bucket), the blob
 * service that signs upload and download URLs, its routes, and the sweep of interrupted uploads.
 */
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { BlobStore } from './blob-store.ts';
import { LocalBlobStore } from './local-store.ts';
import { UrlSigner } from './url-signer.ts';
import { BlobService } from './blob-service.ts';
import { blobRoutes } from './routes.ts';
import { fileRoutes } from './file-routes.ts';
import { deleteProjectBlobs } from './store.ts';

/** The S3 store and the AWS SDK behind it are loaded only when ORRERY_BLOB_URL names a bucket. */
async function openS3Store(blobUrl: string): Promise<BlobStore> {
  const { parseS3Url, S3BlobStore } = await import('./s3-store.ts');
  return new S3BlobStore(parseS3Url(blobUrl));
}

export interface BlobsDeps {
  config: Config;
  database: OpenedDatabase;
  /** Signs blob URLs (auth/secret.ts). */
  urlKey: Buffer;
}

export async function createBlobs({ config, database, urlKey }: BlobsDeps) {
  const { db, dialect } = database;
  const store = config.blobUrl
    ? await openS3Store(config.blobUrl)
    : new LocalBlobStore(join(config.dataDir, 'blobs'), { durable: config.blobFsync });
  const blobs = new BlobService(db, dialect, store, new UrlSigner(urlKey), {
    publicUrl: () => config.publicUrl,
    maxUploadBytes: config.maxUploadBytes,
  });
  let uploadSweeper: NodeJS.Timeout | undefined;
  return {
    store,
    blobs,
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: deleteProjectBlobs,
    /** Its routes behind authentication (files). */
    register: (authed: FastifyInstance) => authed.register(fileRoutes, { blobs }),
    /** Its public routes: the signature in a blob URL is its credential. */
    registerPublic: (app: FastifyInstance) => app.register(blobRoutes, { blobs }),
    /**
     * Uploads cut off by a crash leave temporary files in the blob folder: swept at start and then
     * as often as they can go stale (an upload in progress writes, so its file is never idle long).
     */
    start(log: FastifyBaseLogger): void {
      const sweepUploads = () => {
        if (store instanceof LocalBlobStore) {
          store.sweepTemporary(config.uploadStaleMs).then(
            (n) => n && log.info(`removed ${n} temporary upload file(s) left by interrupted uploads`),
            (err) => log.error({ err }, 'temporary upload sweeper failed'),
          );
        }
      };
      uploadSweeper = setInterval(sweepUploads, Math.min(config.uploadStaleMs, 600_000));
      uploadSweeper.unref();
      setImmediate(sweepUploads);
    },
    stop(): void {
      clearInterval(uploadSweeper);
    },
  };
}

export type Blobs = Awaited<ReturnType<typeof createBlobs>>;
