// `@ekanos/sdk/testing`: createMockContext (K7), a ctx of the platform's shape (K6) built from
// fixtures, so a tool's tests run with no network and no account. Never touches the real network:
// a fetch goes to a fixture handler or throws.
import type { IntegrationContext, JsonSchema, StoredValue } from './index.ts';
import { egressAllows, egressEntryProblem, egressHost } from './egress.ts';

export { egressAllows } from './egress.ts';

export interface FetchHandler {
  match: string | RegExp | ((url: string, request: Request) => boolean);
  respond(request: Request): Response | Promise<Response>;
}
export interface MockContextOptions {
  integration: { slug: string };
  storageSchemas?: { account?: { [key: string]: JsonSchema } };
  egress?: readonly string[];
  storage?: { account?: { [key: string]: unknown } };
  secrets?: { account?: { [name: string]: string } };
  fetchHandlers?: FetchHandler[];
}
export interface LogRow {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}
export type MockContext = IntegrationContext & { readonly logs: LogRow[] };

const MAX_DEPTH = 64;

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A JSON copy: what the platform stores is JSON, so a fixture or a set() value must be JSON. */
function jsonClone(value: unknown, what: string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new TypeError(`${what}: not JSON (${(e as Error).message})`);
  }
  if (text === undefined) throw new TypeError(`${what}: not JSON (${typeof value})`);
  return JSON.parse(text);
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b); // both sides are JSON copies here
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/**
 * The first way `value` breaks `schema`, or null. A JSON Schema subset: type, properties,
 * required, additionalProperties, items, enum, const, minimum/maximum, minLength/maxLength,
 * anyOf/oneOf/allOf. Every other keyword ($ref, pattern, format, …) is ignored, so a mock may
 * accept what the platform refuses; it never refuses what a full validator accepts.
 */
export function schemaProblem(schema: unknown, value: unknown, at = '', depth = 0): string | null {
  if (depth > MAX_DEPTH) return `${at || '/'}: schema nested deeper than ${MAX_DEPTH} levels`;
  if (schema === false) return `${at || '/'}: no value is allowed here`;
  if (!isObject(schema)) return null;
  const where = at || '/';
  const s = schema as Record<string, any>;
  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    const got = typeOf(value);
    if (!types.some((t) => t === got || (t === 'number' && got === 'integer'))) {
      return `${where} must be ${types.join(' or ')}, got ${got}`;
    }
  }
  if (s.enum !== undefined && Array.isArray(s.enum) && !s.enum.some((e: unknown) => deepEqual(e, value))) {
    return `${where} must be one of ${JSON.stringify(s.enum).slice(0, 200)}`;
  }
  if ('const' in s && !deepEqual(s.const, value)) return `${where} must be ${JSON.stringify(s.const)}`;
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) return `${where} must be ≥ ${s.minimum}`;
    if (typeof s.maximum === 'number' && value > s.maximum) return `${where} must be ≤ ${s.maximum}`;
  }
  if (typeof value === 'string') {
    const n = [...value].length; // code points, as JSON Schema counts
    if (typeof s.minLength === 'number' && n < s.minLength) return `${where} must be at least ${s.minLength} characters`;
    if (typeof s.maxLength === 'number' && n > s.maxLength) return `${where} must be at most ${s.maxLength} characters`;
  }
  if (isObject(value)) {
    for (const r of Array.isArray(s.required) ? s.required : []) {
      if (!(r in value)) return `${where} is missing required property "${r}"`;
    }
    const props = isObject(s.properties) ? s.properties : {};
    for (const [k, v] of Object.entries(value)) {
      const p = Object.hasOwn(props, k) ? props[k] : s.additionalProperties;
      if (p === false) return `${where} has unexpected property "${k}"`;
      const problem = schemaProblem(p, v, `${at}/${k}`, depth + 1);
      if (problem) return problem;
    }
  }
  if (Array.isArray(value) && isObject(s.items)) {
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(s.items, value[i], `${at}/${i}`, depth + 1);
      if (problem) return problem;
    }
  }
  for (const sub of Array.isArray(s.allOf) ? s.allOf : []) {
    const problem = schemaProblem(sub, value, at, depth + 1);
    if (problem) return problem;
  }
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub: unknown) => !schemaProblem(sub, value, at, depth + 1))) {
    return `${where} matches none of anyOf`;
  }
  if (Array.isArray(s.oneOf)) {
    const n = s.oneOf.filter((sub: unknown) => !schemaProblem(sub, value, at, depth + 1)).length;
    if (n !== 1) return `${where} matches ${n} of oneOf, not exactly one`;
  }
  return null;
}

function checkKey(key: unknown, what: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 200) {
    throw new TypeError(`${what}: the key must be a string of 1–200 characters, got ${typeof key}`);
  }
  return key;
}

/** A ctx for tests: storage, secrets and fetch answered from fixtures; logger rows in `ctx.logs`. */
export function createMockContext(options: MockContextOptions): MockContext {
  if (!isObject(options) || !isObject(options.integration) || typeof options.integration.slug !== 'string') {
    throw new TypeError("createMockContext: give { integration: { slug: 'my-integration' }, … }");
  }
  const egress = [...(options.egress ?? [])];
  egress.forEach((e, i) => {
    const problem = egressEntryProblem(e);
    if (problem) throw new TypeError(`createMockContext: egress.${i}: ${problem}`);
  });
  const schemas = options.storageSchemas?.account;
  const check = (key: string, data: unknown, what: string) => {
    if (!isObject(schemas)) return; // no schemas declared: any key, any JSON value
    if (!Object.hasOwn(schemas, key)) {
      const known = Object.keys(schemas).join(', ') || 'none';
      throw named('StorageError', `${what}: key "${key}" is not declared in storageSchemas.account (declared: ${known})`);
    }
    const problem = schemaProblem(schemas[key], data);
    if (problem) throw named('StorageError', `${what}: the value for "${key}" does not match its schema: ${problem}`);
  };
  const store = new Map<string, StoredValue>();
  const now = new Date().toISOString();
  for (const [key, value] of Object.entries(options.storage?.account ?? {})) {
    const data = jsonClone(value, `createMockContext: storage.account["${key}"]`);
    check(key, data, 'createMockContext: storage.account');
    store.set(key, { key, data, updatedAt: now });
  }
  const secrets = new Map<string, string>();
  for (const [name, value] of Object.entries(options.secrets?.account ?? {})) {
    if (typeof value !== 'string') throw new TypeError(`createMockContext: secrets.account["${name}"] must be a string`);
    secrets.set(name, value);
  }
  const handlers = [...(options.fetchHandlers ?? [])];
  const logs: LogRow[] = [];

  const log = (level: LogRow['level']) => (fieldsOrMessage?: unknown, message?: string) => {
    const hasFields = isObject(fieldsOrMessage);
    const text = hasFields ? message : fieldsOrMessage;
    const fields = hasFields ? (jsonClone(fieldsOrMessage, `logger.${level}: fields`) as Record<string, unknown>) : {};
    logs.push({ level, message: text === undefined ? '' : String(text), fields });
  };

  const ctx: MockContext = {
    storage: {
      account: {
        get(key: string) {
          const hit = store.get(checkKey(key, 'storage.account.get'));
          return Promise.resolve(hit ? (structuredClone(hit) as StoredValue<any>) : null);
        },
        set(key: string, data: unknown) {
          checkKey(key, 'storage.account.set');
          const copy = jsonClone(data, `storage.account.set("${key}")`);
          check(key, copy, `storage.account.set("${key}")`);
          store.set(key, { key, data: copy, updatedAt: new Date().toISOString() });
          return Promise.resolve();
        },
      },
    },
    secrets: {
      get(name: string) {
        return Promise.resolve(secrets.get(checkKey(name, 'secrets.get')) ?? null);
      },
    },
    async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
      const raw = input instanceof Request ? input.url : String(input);
      const got = egressHost(raw);
      if (!('host' in got) || !egressAllows(egress, raw)) {
        const host = 'host' in got ? got.host : raw.slice(0, 200);
        const why = 'problem' in got ? ` (${got.problem})` : '';
        throw named('EgressError', `fetch to ${host} is not allowed${why}; egress: ${JSON.stringify(egress)}`);
      }
      const request = new Request(input, init);
      for (const [i, h] of handlers.entries()) {
        const m = h.match;
        const hit = typeof m === 'string' ? request.url.startsWith(m) : m instanceof RegExp ? m.test(request.url) : !!m(request.url, request);
        if (!hit) continue;
        const response = await h.respond(request);
        if (!(response instanceof Response)) {
          throw new TypeError(`fetchHandlers[${i}].respond must return a Response (e.g. Response.json({...}))`);
        }
        return response;
      }
      throw named('FetchError', `no fetchHandlers entry matches ${request.method} ${request.url}; tests never reach the network`);
    },
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    logs,
  };
  return ctx;
}
