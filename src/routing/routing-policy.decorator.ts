import { applyDecorators, Injectable, Scope } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { z } from 'zod';

export interface RoutingPolicyMetadata {
  /** The name config `router.type` uses. */
  name: string;
  /** Schema of the policy's arguments (the router block without `type`). */
  args: z.ZodObject;
}

/** The discoverable marker; RouterPolicyCatalog collects every provider carrying it. */
export const DiscoverableRoutingPolicy = DiscoveryService.createDecorator<RoutingPolicyMetadata>();

/**
 * Marks a class as a routing policy named `name`. The class becomes a transient provider, so
 * each pool (and each runtime policy switch) gets its own instance with its own state; it is
 * found purely by being provided in some module of the app.
 */
export function RoutingPolicy(name: string, args: z.ZodObject = z.strictObject({})): ClassDecorator {
  return applyDecorators(
    Injectable({ scope: Scope.TRANSIENT }),
    DiscoverableRoutingPolicy({ name, args }),
  );
}
