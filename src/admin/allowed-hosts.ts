/**
 * Whether a host may be added through the admin API. Entries are host names or IP
 * addresses (exact, case-insensitive) or `*.domain` for any subdomain. No list: any host.
 */
export function hostAllowed(hostname: string, allowed: readonly string[] | undefined): boolean {
  if (!allowed) return true;
  const host = bare(hostname);
  return allowed.some((entry) => {
    const e = bare(entry);
    if (e.startsWith('*.')) return host.endsWith(e.slice(1)) && host.length > e.length - 1;
    return host === e;
  });
}

function bare(host: string): string {
  return host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
}
