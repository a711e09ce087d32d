import { z } from 'zod';
import { SERVER_ROLES } from '../config';

/**
 * A worker address: `http(s)://host[:port]` or TensorRT-LLM's scheme-less `host:port`.
 * Paths, queries, fragments and credentials are refused: the router appends the API paths
 * itself, and a URL with a password would end up in logs and status pages.
 */
export const serverUrlSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(2048, 'is too long')
  .transform((raw, ctx) => {
    const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
    let url: URL;
    try {
      url = new URL(withScheme);
    } catch {
      ctx.addIssue({ code: 'custom', message: `'${raw}' is not a valid URL` });
      return z.NEVER;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.addIssue({ code: 'custom', message: `scheme '${url.protocol.slice(0, -1)}' is not allowed; use http or https` });
      return z.NEVER;
    }
    if (!url.hostname) {
      ctx.addIssue({ code: 'custom', message: 'has no host' });
      return z.NEVER;
    }
    if (url.username || url.password) {
      ctx.addIssue({ code: 'custom', message: 'must not contain credentials' });
      return z.NEVER;
    }
    if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
      ctx.addIssue({ code: 'custom', message: 'must be an origin only (no path, query or fragment)' });
      return z.NEVER;
    }
    return url.origin;
  });

export const serverRoleSchema = z.enum(SERVER_ROLES, { error: `must be one of: ${SERVER_ROLES.join(', ')}` });

export const addServerSchema = z.strictObject({
  url: serverUrlSchema,
  role: serverRoleSchema,
});
export type AddServerBody = z.output<typeof addServerSchema>;

/** `{type, ...args}`, as a pool's `router` block in the config file. */
export const routerSwitchSchema = z.looseObject({
  type: z.string({ error: 'must be a string' }).min(1, 'must not be empty'),
});
export type RouterSwitchBody = z.output<typeof routerSwitchSchema>;

/** Query flags: only the literal strings true/false (and absent) are accepted. */
export const flagSchema = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** What survives a restart when `admin.persist_file` is set. */
export const persistedChangesSchema = z.strictObject({
  version: z.literal(1),
  added_servers: z.array(z.strictObject({ url: serverUrlSchema, role: serverRoleSchema })).default([]),
  removed_servers: z.array(z.strictObject({ url: serverUrlSchema, role: serverRoleSchema })).default([]),
  routers: z.partialRecord(serverRoleSchema, routerSwitchSchema).default({}),
});
export type PersistedChanges = z.output<typeof persistedChangesSchema>;
