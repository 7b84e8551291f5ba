/**
 * Blobs in an S3-compatible bucket (AWS S3, MinIO, Ceph, Garage, R2) through the official AWS SDK,
 * selected by `ORRERY_BLOB_URL=s3://<bucket>?endpoint=<url>&region=<region>&path_style=true`.
 * Credentials come from the SDK's standard chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
 * profiles, instance roles). Uploads stream through a multipart upload (bounded memory, unknown
 * length); downloads stream; URLs handed to clients are presigned by S3 itself.
 */
import { createHash } from 'node:crypto';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  BlobMissing,
  BlobTooLarge,
  type BlobStat,
  type ByteRange,
  type PresignOptions,
  type PresigningBlobStore,
  type PutOptions,
  type PutResult,
} from './blob-store.ts';
import { keyProblem } from './blob-keys.ts';

export interface S3Location {
  bucket: string;
  endpoint?: string;
  region: string;
  pathStyle: boolean;
  /** Optional folder inside the bucket, so several deployments can share one. */
  prefix: string;
}

/** Parses `s3://<bucket>[/<prefix>]?endpoint=&region=&path_style=`. */
export function parseS3Url(raw: string): S3Location {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(
      `ORRERY_BLOB_URL must look like s3://<bucket>?endpoint=<url>&region=<region>, got ${JSON.stringify(raw)}`,
    );
  }
  if (url.protocol !== 's3:' || !url.hostname) throw new Error('ORRERY_BLOB_URL must start with s3://<bucket>');
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint) {
    try {
      new URL(endpoint);
    } catch {
      throw new Error(`ORRERY_BLOB_URL endpoint must be an absolute URL, got ${JSON.stringify(endpoint)}`);
    }
  }
  const known = new Set(['endpoint', 'region', 'path_style']);
  for (const k of url.searchParams.keys())
    if (!known.has(k))
      throw new Error(`ORRERY_BLOB_URL: unknown parameter "${k}" (known: endpoint, region, path_style)`);
  return {
    bucket: url.hostname,
    endpoint,
    region: url.searchParams.get('region') ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    pathStyle: ['1', 'true', 'yes'].includes((url.searchParams.get('path_style') ?? '').toLowerCase()),
    prefix: decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, '')),
  };
}

const isMissing = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
};

export class S3BlobStore implements PresigningBlobStore {
  readonly scheme = 's3';
  readonly client: S3Client;

  constructor(
    readonly location: S3Location,
    extra: Partial<S3ClientConfig> = {},
  ) {
    this.client = new S3Client({
      region: location.region,
      ...(location.endpoint ? { endpoint: location.endpoint } : {}),
      forcePathStyle: location.pathStyle,
      // Checksums only where S3 requires them: S3-compatible servers differ in what they accept.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...extra,
    });
  }

  private objectKey(key: string): string {
    const problem = keyProblem(key);
    if (problem) throw new Error(`invalid blob key ${JSON.stringify(key)}: ${problem}`);
    return this.location.prefix ? `${this.location.prefix}/${key}` : key;
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<PutResult> {
    const hash = createHash('sha256');
    let size = 0;
    let tooLarge = false;
    const max = opts.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (max !== undefined && size > max) {
          tooLarge = true;
          return done(new BlobTooLarge(max));
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const out = new PassThrough();
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.location.bucket, Key: this.objectKey(key), Body: out, ContentType: opts.contentType },
      queueSize: 2,
      partSize: 8 * 1024 * 1024,
    });
    try {
      await Promise.all([pipeline(body, meter, out), upload.done()]);
    } catch (err) {
      // An oversize or broken body aborts the multipart upload: nothing is kept.
      out.destroy();
      await upload.abort().catch(() => {});
      throw tooLarge && max !== undefined ? new BlobTooLarge(max) : err;
    }
    return { size, etag: hash.digest('hex') };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    try {
      const r = await this.client.send(
        new GetObjectCommand({
          Bucket: this.location.bucket,
          Key: this.objectKey(key),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return r.Body as Readable;
    } catch (err) {
      if (isMissing(err)) throw new BlobMissing(key);
      throw err;
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const r = await this.client.send(
        new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }),
      );
      return {
        size: Number(r.ContentLength ?? 0),
        etag: r.ETag?.replace(/"/g, ''),
        modifiedAt: r.LastModified ?? new Date(0),
      };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
  }

  /** A server-side copy, then the delete: the copy's answer describes exactly the bytes moved. */
  async move(from: string, to: string): Promise<BlobStat> {
    const source = this.objectKey(from);
    const CopySource = `${this.location.bucket}/${source.split('/').map(encodeURIComponent).join('/')}`;
    let etag: string | undefined;
    try {
      const r = await this.client.send(
        new CopyObjectCommand({
          Bucket: this.location.bucket,
          Key: this.objectKey(to),
          CopySource,
          MetadataDirective: 'COPY',
        }),
      );
      etag = r.CopyObjectResult?.ETag?.replace(/"/g, '');
    } catch (err) {
      if (isMissing(err)) throw new BlobMissing(from);
      throw err;
    }
    const copied = await this.stat(to);
    if (!copied) throw new BlobMissing(to);
    await this.delete(from);
    return { ...copied, etag: etag ?? copied.etag };
  }

  async *list(prefix: string): AsyncIterable<string> {
    const base = this.location.prefix ? `${this.location.prefix}/` : '';
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: base + prefix, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield o.Key.slice(base.length);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async presign(key: string, opts: PresignOptions): Promise<string> {
    const Key = this.objectKey(key);
    const command =
      opts.method === 'PUT'
        ? new PutObjectCommand({
            Bucket: this.location.bucket,
            Key,
            ...(opts.contentType ? { ContentType: opts.contentType } : {}),
          })
        : new GetObjectCommand({
            Bucket: this.location.bucket,
            Key,
            ...(opts.disposition ? { ResponseContentDisposition: opts.disposition } : {}),
          });
    return getSignedUrl(this.client, command, { expiresIn: opts.expiresInSeconds });
  }

  /** Readiness: the bucket answers. */
  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.location.bucket }));
  }
}
