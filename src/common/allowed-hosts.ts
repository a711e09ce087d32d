import { isIP } from 'node:net';

/**
 * Whether a host may be added through the admin API. Entries are host names or IP
 * addresses (exact, case-insensitive) or `*.domain` for any subdomain. No list: any host but
 * link-local addresses (169.254.0.0/16, fe80::/10, the cloud metadata address fd00:ec2::254),
 * which only a list naming them lets through.
 */
export function hostAllowed(hostname: string, allowed: readonly string[] | undefined): boolean {
  if (!allowed) return !isLinkLocalOrMetadata(bare(hostname));
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

/** Addresses no worker has, but cloud metadata services do. */
export function isLinkLocalOrMetadata(host: string): boolean {
  const v = isIP(host);
  if (v === 4) return host.startsWith('169.254.');
  if (v !== 6) return false;
  const h = host.toLowerCase();
  // IPv4-mapped form of a link-local address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (mapped) return mapped[1].startsWith('169.254.');
  if (/^::ffff:a9fe:/.test(h)) return true;
  if (/^fe[89ab][0-9a-f]:/.test(h)) return true;
  return expandV6(h) === 'fd00:0ec2:0000:0000:0000:0000:0000:0254';
}

function expandV6(h: string): string {
  const [head, tail = ''] = h.split('::');
  const a = head ? head.split(':') : [];
  const b = tail ? tail.split(':') : [];
  const groups = h.includes('::') ? [...a, ...Array<string>(8 - a.length - b.length).fill('0'), ...b] : a;
  return groups.map((g) => g.padStart(4, '0')).join(':');
}
