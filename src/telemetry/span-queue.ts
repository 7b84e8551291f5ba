/**
 * The batch span processor with its queue bound counted: a span that ends while
 * OTEL_BSP_MAX_QUEUE_SIZE spans wait for export is dropped here, and counted
 * (`orrery_otel_spans_dropped_total`), instead of silently inside the SDK's processor. Spans wait
 * from their end until the processor hands them to the exporter; the exporter below tells when.
 */
import { TraceFlags, type Context } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface QueueOptions {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduleDelayMs: number;
  exportTimeoutMs: number;
  onDropped: (n: number) => void;
}

export class CountedBatchProcessor implements SpanProcessor {
  private waiting = 0;
  private readonly batch: BatchSpanProcessor;

  constructor(
    exporter: SpanExporter,
    private readonly opts: QueueOptions,
  ) {
    const counting: SpanExporter = {
      export: (spans: ReadableSpan[], done: (r: ExportResult) => void) => {
        this.waiting = Math.max(0, this.waiting - spans.length);
        exporter.export(spans, done);
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
    this.batch = new BatchSpanProcessor(counting, {
      maxQueueSize: opts.maxQueueSize,
      maxExportBatchSize: opts.maxExportBatchSize,
      scheduledDelayMillis: opts.scheduleDelayMs,
      exportTimeoutMillis: opts.exportTimeoutMs,
    });
  }

  onStart(span: Span, parent: Context): void {
    this.batch.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.waiting >= this.opts.maxQueueSize) {
      this.opts.onDropped(1);
      return;
    }
    this.waiting++;
    this.batch.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.batch.shutdown();
  }
}
