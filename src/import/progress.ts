/**
 * Progress of an import: one bar per kind on a terminal (redrawn in place, counts and bytes),
 * plain lines otherwise (a log, a CI job, a test reading the output).
 */
export interface KindProgress {
  kind: string;
  total?: number;
  done: number;
  copied: number;
  skipped: number;
  failed: number;
  bytes: number;
  finished: boolean;
}

export interface ProgressSink {
  update(p: KindProgress): void;
  /** A line that is not progress (a failure, a warning), printed above the bars. */
  note(line: string): void;
  end(): void;
}

export const formatBytes = (n: number): string => {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
};

const counts = (p: KindProgress) =>
  `${p.done}${p.total !== undefined ? `/${p.total}` : ''} (copied ${p.copied}, skipped ${p.skipped}, failed ${p.failed})${p.bytes ? `, ${formatBytes(p.bytes)}` : ''}`;

/** Redraws every kind's bar in place, at most every 100 ms. */
export class TtyProgress implements ProgressSink {
  private readonly kinds = new Map<string, KindProgress>();
  private drawn = 0;
  private last = 0;

  constructor(private readonly out: NodeJS.WriteStream) {}

  update(p: KindProgress): void {
    this.kinds.set(p.kind, { ...p });
    const now = Date.now();
    if (p.finished || now - this.last >= 100) {
      this.last = now;
      this.draw();
    }
  }

  note(line: string): void {
    this.clear();
    this.out.write(`${line}\n`);
    this.draw();
  }

  end(): void {
    this.draw();
    this.drawn = 0;
  }

  private clear(): void {
    if (this.drawn) this.out.write(`\x1b[${this.drawn}A\x1b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    this.clear();
    const width = Math.max(10, Math.min(30, (this.out.columns ?? 80) - 70));
    for (const p of this.kinds.values()) {
      const ratio = p.total ? Math.min(1, p.done / p.total) : p.finished ? 1 : 0;
      const filled = Math.round(ratio * width);
      const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
      this.out.write(`${p.kind.padEnd(13)} ${bar} ${counts(p)}${p.finished ? ' done' : ''}\n`);
      this.drawn++;
    }
  }
}

/** One line per change of count, at most one per second per kind, and always the last one. */
export class PlainProgress implements ProgressSink {
  private readonly last = new Map<string, number>();

  constructor(private readonly out: NodeJS.WritableStream) {}

  update(p: KindProgress): void {
    const now = Date.now();
    if (!p.finished && now - (this.last.get(p.kind) ?? 0) < 1000) return;
    this.last.set(p.kind, now);
    this.out.write(`${p.kind}: ${counts(p)}${p.finished ? ' done' : ''}\n`);
  }

  note(line: string): void {
    this.out.write(`${line}\n`);
  }

  end(): void {}
}

export const SILENT: ProgressSink = { update() {}, note() {}, end() {} };
