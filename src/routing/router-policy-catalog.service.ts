import { Injectable, Logger } from '@nestjs/common';
import { ContextIdFactory, DiscoveryService, ModuleRef } from '@nestjs/core';
import type { Type } from '@nestjs/common';
import { ConfigError, type ServerRole } from '../config';
import { BaseRouter } from './base-router';
import type { Router } from './router.interface';
import type { RouterConfig } from './router-config';
import { DiscoverableRoutingPolicy, type RoutingPolicyMetadata } from './routing-policy.decorator';
import { splitRouterArgs } from './trtllm-router-args';

interface PolicyEntry {
  meta: RoutingPolicyMetadata;
  type: Type<BaseRouter>;
}

/**
 * Name -> policy class, collected from every provider marked with @RoutingPolicy in the app
 * (built-in ones and users' own modules alike).
 */
@Injectable()
export class RouterPolicyCatalog {
  private readonly logger = new Logger(RouterPolicyCatalog.name);
  private policies?: Map<string, PolicyEntry>;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly moduleRef: ModuleRef,
  ) {}

  names(): string[] {
    return [...this.entries().keys()].sort();
  }

  has(name: string): boolean {
    return this.entries().has(name);
  }

  /**
   * Validates a spec against the policy's schema; throws ConfigError naming the problem.
   * `fromFile`: a router block of a config file, read as TensorRT-LLM reads it (the policy name
   * in any case; arguments the policy does not take are ignored with a warning naming them).
   */
  validate(spec: RouterConfig, where: string, fromFile = false): Record<string, unknown> {
    const entry = this.lookup(spec.type, fromFile);
    if (!entry) {
      throw new ConfigError(
        `${where}.type: unknown routing policy '${spec.type}'; available: ${this.names().join(', ')}`,
      );
    }
    const shape = entry.meta.args.shape as Record<string, unknown>;
    const inherited = Object.fromEntries(Object.entries(spec.inherited).filter(([k]) => k in shape));
    let args = spec.args;
    if (fromFile) {
      const split = splitRouterArgs(entry.meta.name, new Set(Object.keys(shape)), spec.args);
      for (const key of split.unsupported) {
        this.logger.warn(`${where}.${key}: TensorRT-LLM's '${entry.meta.name}' argument is not supported by this router; ignored`);
      }
      for (const key of split.unknown) {
        this.logger.warn(`${where}.${key}: not an argument of routing policy '${entry.meta.name}'; ignored`);
      }
      args = split.args;
    }
    const parsed = entry.meta.args.safeParse({ ...inherited, ...args });
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${where}${i.path.length ? '.' + i.path.map(String).join('.') : ''}: ${i.message}`)
        .join('; ');
      throw new ConfigError(`invalid arguments for routing policy '${entry.meta.name}': ${detail}`);
    }
    return parsed.data as Record<string, unknown>;
  }

  /** A fresh, initialised instance of the policy for one pool. */
  async create(role: ServerRole, spec: RouterConfig, where = `${role}_servers.router`, fromFile = false): Promise<Router> {
    const args = this.validate(spec, where, fromFile);
    const entry = this.lookup(spec.type, fromFile)!;
    // Transient providers: resolve() under a new context id yields a new instance whose
    // dependencies come from the policy's own module.
    const router = await this.moduleRef.resolve(entry.type, ContextIdFactory.create(), { strict: false });
    router.init({ policy: entry.meta.name, role, args });
    try {
      await router.start();
    } catch (err) {
      await router.close().catch(() => undefined);
      throw new ConfigError(`${where}: routing policy '${entry.meta.name}' could not start: ${(err as Error).message}`);
    }
    return router;
  }

  /** TensorRT-LLM matches router.type in any case: so do config files (exact names first). */
  private lookup(type: string, anyCase: boolean): PolicyEntry | undefined {
    const exact = this.entries().get(type);
    if (exact || !anyCase) return exact;
    const lower = type.toLowerCase();
    return [...this.entries().values()].find((e) => e.meta.name.toLowerCase() === lower);
  }

  private entries(): Map<string, PolicyEntry> {
    if (this.policies) return this.policies;
    const found = new Map<string, PolicyEntry>();
    for (const wrapper of this.discovery.getProviders({ metadataKey: DiscoverableRoutingPolicy.KEY })) {
      const meta = this.discovery.getMetadataByDecorator(DiscoverableRoutingPolicy, wrapper);
      const type = wrapper.metatype as Type<BaseRouter> | undefined;
      if (!meta || !type) continue;
      const other = found.get(meta.name);
      if (other && other.type !== type) {
        throw new ConfigError(`routing policy name '${meta.name}' is claimed by ${other.type.name} and ${type.name}`);
      }
      found.set(meta.name, { meta, type });
    }
    this.policies = found;
    return found;
  }
}
