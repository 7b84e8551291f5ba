/**
 * Free space of the file system that holds a folder, for readiness: a replica whose disk is all
 * but full fails every write, so a load balancer should send its traffic elsewhere.
 */
import { statfs } from 'node:fs/promises';

const mib = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MiB`;

/** Throws, naming the folder and the bound, when less than `minBytes` is free to this process. */
export async function assertFreeDisk(dir: string, minBytes: number): Promise<void> {
  const s = await statfs(dir);
  const free = s.bavail * s.bsize;
  if (free < minBytes)
    throw new Error(`the disk of ${dir} has ${mib(free)} free, less than ORRERY_MIN_FREE_DISK (${mib(minBytes)})`);
}
