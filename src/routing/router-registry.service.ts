import { Injectable } from '@nestjs/common';
import { ContextIdFactory, DiscoveryService, ModuleRef } from '@nestjs/core';
import type { Type } from '@nestjs/common';
import { ConfigError, type ServerRole } from '../config';
import { BaseRouter } from './base-router';
import type { Router } from './router.interface';
import type { RouterSpec } from './router-spec';
import { DiscoverableRoutingPolicy, type RoutingPolicyMetadata } from './routing-policy.decorator';

interface PolicyEntry {
  meta: RoutingPolicyMetadata;
  type: Type<BaseRouter>;
}

/**
 * Name -> policy class, collected from every provider marked with @RoutingPolicy in the app
 * (built-in ones and users' own modules alike).
 */
@Injectable()
export class RouterRegistry {
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

  /** Validates a spec against the policy's schema; throws ConfigError naming the problem. */
  validate(spec: RouterSpec, where: string): Record<string, unknown> {
    const entry = this.entries().get(spec.type);
    if (!entry) {
      throw new ConfigError(
        `${where}.type: unknown routing policy '${spec.type}'; available: ${this.names().join(', ')}`,
      );
    }
    const shape = entry.meta.args.shape as Record<string, unknown>;
    const inherited = Object.fromEntries(Object.entries(spec.inherited).filter(([k]) => k in shape));
    const parsed = entry.meta.args.safeParse({ ...inherited, ...spec.args });
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${where}${i.path.length ? '.' + i.path.map(String).join('.') : ''}: ${i.message}`)
        .join('; ');
      throw new ConfigError(`invalid arguments for routing policy '${spec.type}': ${detail}`);
    }
    return parsed.data as Record<string, unknown>;
  }

  /** A fresh, initialised instance of the policy for one pool. */
  async create(role: ServerRole, spec: RouterSpec, where = `${role}_servers.router`): Promise<Router> {
    const args = this.validate(spec, where);
    const entry = this.entries().get(spec.type)!;
    // Transient providers: resolve() under a new context id yields a new instance whose
    // dependencies come from the policy's own module.
    const router = await this.moduleRef.resolve(entry.type, ContextIdFactory.create(), { strict: false });
    router.init({ policy: spec.type, role, args });
    return router;
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
