import { Inject, Injectable, Logger } from '@nestjs/common';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, normalizeServerUrl, APP_CONFIG, type AppConfig, type ServerRole } from '../config';
import { serverIdFor, type ServerState } from '../servers';
import { persistedChangesSchema, type PersistedChanges, type RouterSwitchBody } from './admin-schemas';

interface ServerRef {
  url: string;
  role: ServerRole;
}

// By id, so `localhost:8001` in the config and `http://localhost:8001/` here are one server.
const same = (a: ServerRef, b: ServerRef): boolean => serverIdFor(a.role, normalizeServerUrl(a.url)) === serverIdFor(b.role, normalizeServerUrl(b.url));

/**
 * The changes made through the admin API, kept in memory and, with `admin.persist_file`,
 * written to that file (tmp file + rename, so a crash never leaves half a file) to be
 * replayed at the next start.
 */
@Injectable()
export class AdminChangeStore {
  private readonly logger = new Logger(AdminChangeStore.name);
  private readonly file?: string;
  private changes: PersistedChanges;
  private writes: Promise<void> = Promise.resolve();
  private tmpCounter = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    // Relative paths are relative to the directory the router was started in.
    this.file = config.admin.persist_file ? resolve(process.cwd(), config.admin.persist_file) : undefined;
    // Read while the app is being built, so a damaged file stops it before anything opens.
    this.changes = this.load();
  }

  get persistFile(): string | undefined {
    return this.file;
  }

  /** Reads the persisted changes; a missing file is an empty one, a damaged one stops the start. */
  private load(): PersistedChanges {
    if (!this.file) return emptyChanges();
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyChanges();
      throw new ConfigError(`admin.persist_file: cannot read ${this.file}: ${(err as Error).message}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`admin.persist_file: ${this.file} is not valid JSON: ${(err as Error).message}`);
    }
    const parsed = persistedChangesSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`admin.persist_file: ${this.file}: ${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
    }
    this.logger.log(`loaded admin changes from ${this.file}`);
    return parsed.data;
  }

  current(): PersistedChanges {
    return structuredClone(this.changes);
  }

  isRemoved(ref: ServerRef): boolean {
    return this.changes.removed_servers.some((s) => same(s, ref));
  }

  async serverAdded(server: ServerState): Promise<void> {
    const ref = refOf(server);
    this.changes.removed_servers = this.changes.removed_servers.filter((s) => !same(s, ref));
    if (server.source === 'admin' && !this.changes.added_servers.some((s) => same(s, ref))) {
      this.changes.added_servers.push(ref);
    }
    await this.persist();
  }

  /** An admin server is forgotten; a config server is remembered as removed. Etcd owns its own. */
  async serverRemoved(server: ServerState): Promise<void> {
    const ref = refOf(server);
    this.changes.added_servers = this.changes.added_servers.filter((s) => !same(s, ref));
    if (server.source === 'config' && !this.isRemoved(ref)) this.changes.removed_servers.push(ref);
    await this.persist();
  }

  async routerSwitched(role: ServerRole, body: RouterSwitchBody): Promise<void> {
    this.changes.routers[role] = { ...body };
    await this.persist();
  }

  /** Writes are queued, so the file always ends with the latest state. */
  private persist(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    const text = `${JSON.stringify(this.changes, null, 2)}\n`;
    const write = this.writes.then(() => this.writeAtomically(file, text));
    this.writes = write.catch(() => undefined);
    return write;
  }

  private async writeAtomically(file: string, text: string): Promise<void> {
    const tmp = `${file}.${process.pid}.${++this.tmpCounter}.tmp`;
    try {
      await mkdir(dirname(file), { recursive: true });
      const handle = await open(tmp, 'w', 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }
}

function refOf(server: ServerState): ServerRef {
  return { url: server.url, role: server.role };
}

function emptyChanges(): PersistedChanges {
  return { version: 1, added_servers: [], removed_servers: [], routers: {} };
}
