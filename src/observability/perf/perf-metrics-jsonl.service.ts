import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { existsSync, mkdirSync } from 'node:fs';
import { appendFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { APP_CONFIG, type AppConfig } from '../../config';

/** Records waiting for the disk at most; more are dropped (and counted), as TensorRT-LLM bounds its queue. */
export const JSONL_QUEUE_SIZE = 1024;
const SHUTDOWN_FLUSH_MS = 5_000;

/**
 * `perf_metrics_output_dir`: one JSON line per completed request, in TensorRT-LLM's file naming
 * (`perf_metrics-disagg-<host>-<pid>-<UTC time>.jsonl`). The request path only queues the
 * record; a batch is serialised and appended at the next turn, one write at a time. A file
 * past `perf_metrics.output_file_max_mb` is closed and a new one started; only this
 * process's newest `perf_metrics.output_max_files` are kept.
 */
@Injectable()
export class PerfMetricsJsonl implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('PerfMetricsJsonl');
  private readonly dir: string | undefined;
  private readonly prefix = `perf_metrics-disagg-${hostname()}-${process.pid}-`;
  private readonly maxBytes: number;
  private readonly maxFiles: number;
  private path: string | undefined;
  /** This process's files, oldest first. */
  private readonly files: string[] = [];
  /** The second of the last file name, and how many names it has given out. */
  private stamp = '';
  private sameSecond = 0;
  private fileBytes = 0;
  private queue: unknown[] = [];
  /** Records queued or being written. */
  private pending = 0;
  private scheduled = false;
  private writing: Promise<void> = Promise.resolve();
  private writeErrors = 0;
  dropped = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.dir = config.perf_metrics_output_dir;
    this.maxBytes = config.perf_metrics.output_file_max_mb * 1024 * 1024;
    this.maxFiles = config.perf_metrics.output_max_files;
  }

  get enabled(): boolean {
    return this.path !== undefined;
  }

  /** Records queued or being written. */
  get pendingRecords(): number {
    return this.pending;
  }

  /** The file being written now. */
  get currentFile(): string | undefined {
    return this.path;
  }

  onModuleInit(): void {
    if (!this.dir) return;
    try {
      mkdirSync(this.dir, { recursive: true });
      this.path = this.newPath();
      this.logger.log(`per-request metrics go to ${this.path}`);
    } catch (err) {
      this.logger.error(`perf_metrics_output_dir ${this.dir}: ${(err as Error).message}; no metrics files are written`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.path) return;
    this.flush();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.writing, new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS)))]);
    clearTimeout(timer);
  }

  /** Queues one record; never waits and never throws. */
  submit(record: unknown): void {
    if (!this.path) return;
    if (this.pending >= JSONL_QUEUE_SIZE) {
      this.dropped++;
      if (this.dropped === 1 || this.dropped % 1000 === 0) this.logger.warn(`dropped ${this.dropped} performance metrics records (the disk is behind)`);
      return;
    }
    this.pending++;
    this.queue.push(record);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    let data = '';
    for (const record of batch) data += JSON.stringify(record) + '\n';
    this.writing = this.writing.then(() => this.write(data, batch.length));
  };

  private async write(data: string, count: number): Promise<void> {
    try {
      const bytes = Buffer.byteLength(data);
      if (this.fileBytes > 0 && this.fileBytes + bytes > this.maxBytes) await this.rotate();
      await appendFile(this.path!, data, 'utf8');
      this.fileBytes += bytes;
    } catch (err) {
      this.dropped += count;
      if (++this.writeErrors === 1) this.logger.warn(`cannot write ${this.path}: ${(err as Error).message}`);
    } finally {
      this.pending -= count;
    }
  }

  private async rotate(): Promise<void> {
    this.path = this.newPath();
    this.fileBytes = 0;
    while (this.files.length > this.maxFiles) await unlink(this.files.shift()!).catch(() => undefined);
  }

  /**
   * TensorRT-LLM's name; a second file within the same second gets `.1`, `.2`... before
   * `.jsonl`, counted on: a name rotated out (deleted) within that second is never reused.
   */
  private newPath(): string {
    const ts = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    if (ts !== this.stamp) {
      this.stamp = ts;
      this.sameSecond = 0;
    }
    let path: string;
    do {
      const n = this.sameSecond++;
      path = join(this.dir!, n === 0 ? `${this.prefix}${ts}.jsonl` : `${this.prefix}${ts}.${n}.jsonl`);
    } while (existsSync(path));
    this.files.push(path);
    return path;
  }
}
