export const SERVER_ROLES = ['context', 'generation'] as const;
export type ServerRole = (typeof SERVER_ROLES)[number];

/** TensorRT-LLM writes worker addresses as `host:port`; the session needs an origin. */
export function normalizeServerUrl(url: string): string {
  const withScheme = /^https?:\/\//i.test(url) ? url : `http://${url}`;
  return withScheme.replace(/\/+$/, '');
}
