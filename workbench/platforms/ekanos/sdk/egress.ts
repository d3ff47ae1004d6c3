// Egress rules shared by defineIntegration (which hosts may be declared) and createMockContext
// (which URLs a fetch may reach). The cases in egress_cases.json pin them; the Python side
// checks the same table, so both sides must read a URL the same way. Hence the rule: a URL that
// two parsers could read differently (backslashes, whitespace, `https:host` without slashes,
// userinfo, percent-escapes in the host) is denied before it is parsed at all.

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
// At least one dot after a wildcard: `*.example` would open a whole top-level domain.
const HOST = new RegExp(`^(?:\\*\\.${LABEL}\\.${LABEL}(?:\\.${LABEL})*|${LABEL}(?:\\.${LABEL})*)$`);

// Names every resolver keeps to this machine or its network (RFC 6761, 6762, 8375; /etc/hosts):
// the same lists as providers/hostnames.py, pinned by the entry cases of egress_cases.json.
const LOCAL_NAMES = ['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback'];
const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.home.arpa', '.localdomain'];

/** Why `entry` is not a valid egress host, or null when it is (`api.acme.example`, `*.acme.example`). */
export function egressEntryProblem(entry: unknown): string | null {
  if (typeof entry !== 'string') return `must be a host name string, got ${typeof entry}`;
  if (/[:/@?#\\\s]/.test(entry)) {
    return `"${entry.slice(0, 100)}" is not a bare host: no scheme, path, port or userinfo (e.g. "api.acme.example")`;
  }
  if (entry.length > 253 || !HOST.test(entry)) {
    return `"${entry.slice(0, 100)}" is not a host name: lowercase letters, digits, hyphens and dots, or "*.domain.tld"`;
  }
  // A last label of digits or 0x-hex is an address to both the URL parser and the system
  // resolver (`127.0.0.0x1`, `0x7f.1`, `2130706433` are 127.0.0.1), or a host the parser refuses.
  if (/(?:^|\.)(?:[0-9]+|0x[0-9a-f]*)$/.test(entry)) return `"${entry}" is an IP address; egress takes host names`;
  const name = entry.startsWith('*.') ? entry.slice(2) : entry;
  if (LOCAL_NAMES.includes(name) || LOCAL_SUFFIXES.some((s) => name.endsWith(s))) {
    return `"${entry}" is a name of this machine or its local network (localhost, *.localhost, *.local, *.internal, …); egress takes public host names`;
  }
  return null;
}

/** The host a fetch to `url` would reach, or an error message when the URL is not allowed as such. */
export function egressHost(url: string): { host: string } | { problem: string } {
  if (!/^https:\/\/[^/\\]/i.test(url)) return { problem: 'only https:// URLs may be fetched' };
  // deno-lint-ignore no-control-regex
  if (/[\\\s\x00-\x1f\x7f]/.test(url)) return { problem: 'the URL has a backslash, whitespace or a control character' };
  const authority = url.slice(8).split(/[/?#]/, 1)[0];
  if (authority.includes('@')) return { problem: 'URLs with credentials (user@host) are not allowed' };
  if (authority.includes('%')) return { problem: 'the host has percent-escapes' };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { problem: 'the URL does not parse' };
  }
  if (parsed.port !== '') return { problem: `port ${parsed.port} is not allowed (egress is https on port 443)` };
  return { host: parsed.hostname };
}

/** Whether `host` (as URL.hostname gives it: lowercase, punycode) is covered by `egress`. */
export function hostAllowed(egress: readonly string[], host: string): boolean {
  if (host.startsWith('[') || /^[0-9.]+$/.test(host)) return false; // IP literals: never
  return egress.some((entry) => {
    const e = entry.toLowerCase();
    // `*.x.example` covers subdomains at any depth, never x.example itself
    return e.startsWith('*.') ? host.endsWith(e.slice(1)) && host.length > e.length - 1 : host === e;
  });
}

/** Whether a fetch to `url` may leave under `egress` (the rule egress_cases.json pins). */
export function egressAllows(egress: readonly string[], url: string): boolean {
  const got = egressHost(url);
  return 'host' in got && hostAllowed(egress, got.host);
}
