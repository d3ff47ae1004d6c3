// `@ekanos/sdk` as the workbench serves it (seed 003, rules K1–K5): defineIntegration with the
// platform's load checks, and what the workbench's describe step reads (describeIntegration).
import { egressEntryProblem } from './egress.ts';

export type JsonSchema = { [key: string]: unknown };
export interface ToolParameters {
  type: 'object';
  properties?: { [name: string]: JsonSchema };
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
}
export interface Logger {
  debug(fieldsOrMessage?: unknown, message?: string): void;
  info(fieldsOrMessage?: unknown, message?: string): void;
  warn(fieldsOrMessage?: unknown, message?: string): void;
  error(fieldsOrMessage?: unknown, message?: string): void;
}
export interface StoredValue<T = any> {
  key: string;
  data: T;
  updatedAt: string;
}
/** The `ctx` a tool's `run` gets (K6). */
export interface IntegrationContext {
  storage: {
    account: {
      get<T = any>(key: string): Promise<StoredValue<T> | null>;
      set(key: string, data: unknown): Promise<void>;
    };
  };
  secrets: { get(name: string): Promise<string | null> };
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  logger: Logger;
}
/** One tool (K1): the model reads name, description, parameters and outputExample. */
export interface Tool<Args = any> {
  name: string;
  description: string;
  parameters?: ToolParameters;
  outputExample: { [key: string]: unknown };
  run(ctx: IntegrationContext, args: Args): unknown;
  [extra: string]: unknown;
}
export interface IntegrationDefinition {
  slug: string;
  egress?: string[];
  storage?: { account?: { [key: string]: JsonSchema } };
  tools: Tool[];
  [extra: string]: unknown;
}
export interface Issue {
  path: string;
  message: string;
}

/** A bad definition: `path` is where the first problem is (`tools.0.parameters`), `issues` lists all. */
export class IntegrationDefinitionError extends Error {
  override name = 'IntegrationDefinitionError';
  path: string;
  issues: Issue[];
  constructor(issues: Issue[]) {
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})` : '';
    super(`defineIntegration: ${issues[0].path}: ${issues[0].message}${more}`);
    this.path = issues[0].path;
    this.issues = issues;
  }
}

// Bounds on what is walked: a definition is code the author controls, but a cycle or a huge
// generated schema must give an error, not a hang (STYLE habit 12).
export const LIMITS = { depth: 64, tools: 200, schemaNodes: 10_000, issues: 100, slug: 63, storageKey: 200 };
const SLUG = /^[a-z][a-z0-9-]*$/;
// Windows' device names, refused as a slug (the integration's id names its state folder, SEC2):
// the workbench's table (gem/names.py DEVICES), which tests/test_sec_names.py holds this to.
const DIGITS = [1, 2, 3, 4, 5, 6, 7, 8, 9];
const DEVICES = new Set(['con', 'prn', 'aux', 'nul', ...DIGITS.flatMap((i) => [`com${i}`, `lpt${i}`])]);
const TOOL_NAME = /^[a-z][a-z0-9_]*$/;
const ROOT_KEYS = ['type', 'properties', 'required', 'additionalProperties'];

const registry = new WeakSet<object>();

/** The name the assistant sees (K4): `acme-payments` + `list_payments` → `acme_payments_list_payments`. */
export function effectiveName(slug: string, name: string): string {
  const prefix = `${slug.replace(/-/g, '_')}_`;
  return name.startsWith(prefix) ? name : prefix + name;
}

/** True only for a value defineIntegration returned (not a copy, a look-alike or a proxy). */
export function isIntegration(x: unknown): boolean {
  return typeof x === 'object' && x !== null && registry.has(x);
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** A frozen JSON copy of `value`, or null after adding an issue (not JSON, cyclic, too deep or too big). */
function jsonCopy(value: unknown, path: string, issues: Issue[]): unknown {
  let nodes = 0;
  const stack: unknown[] = [];
  const fail = (where: string, message: string): never => {
    throw { where, message };
  };
  const walk = (v: unknown, where: string, depth: number): unknown => {
    if (++nodes > LIMITS.schemaNodes) fail(path, `more than ${LIMITS.schemaNodes} values`);
    if (depth > LIMITS.depth) fail(where, `nested deeper than ${LIMITS.depth} levels`);
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? v : fail(where, `${v} is not a JSON number`);
    if (typeof v !== 'object') return fail(where, `a ${typeof v} is not JSON`);
    if (stack.includes(v)) fail(where, 'cycle: a value contains itself');
    stack.push(v);
    try {
      if (Array.isArray(v)) return Object.freeze(v.map((x, i) => walk(x, `${where}.${i}`, depth + 1)));
      if (!isPlainObject(v)) return fail(where, `a ${v.constructor?.name ?? 'non-plain'} object is not JSON`);
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        if (x !== undefined) out[k] = walk(x, `${where}.${k}`, depth + 1); // JSON drops undefined too
      }
      return Object.freeze(out);
    } finally {
      stack.pop();
    }
  };
  try {
    return walk(value, path, 0);
  } catch (e) {
    const { where, message } = e as Issue & { where: string };
    issues.push({ path: where, message });
    return null;
  }
}

function checkParameters(p: unknown, at: string, issues: Issue[]): unknown {
  if (!isPlainObject(p)) {
    issues.push({ path: at, message: `must be an object schema ({ type: 'object', … }), got ${describe(p)}` });
    return null;
  }
  const before = issues.length;
  for (const key of Object.keys(p)) {
    if (!ROOT_KEYS.includes(key)) {
      issues.push({ path: at, message: `unknown key "${key}" at the root; allowed: ${ROOT_KEYS.join(', ')}` });
    }
  }
  if (p.type !== 'object') issues.push({ path: at, message: `root type must be 'object', got ${describe(p.type)}` });
  if ('properties' in p && !isPlainObject(p.properties)) {
    issues.push({ path: at, message: `properties must be an object, got ${describe(p.properties)}` });
  }
  if ('required' in p && (!Array.isArray(p.required) || !p.required.every((r) => typeof r === 'string'))) {
    issues.push({ path: at, message: 'required must be an array of strings' });
  }
  const extra = p.additionalProperties;
  if ('additionalProperties' in p && typeof extra !== 'boolean' && !isPlainObject(extra)) {
    issues.push({ path: at, message: 'additionalProperties must be a boolean or a schema object' });
  }
  return issues.length > before ? null : jsonCopy(p, at, issues);
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'string') return JSON.stringify(x.slice(0, 60));
  return typeof x === 'object' ? 'an object' : typeof x;
}

function checkTool(t: unknown, i: number, issues: Issue[]): Record<string, unknown> | null {
  const at = `tools.${i}`;
  if (!isPlainObject(t)) {
    issues.push({ path: at, message: `a tool must be an object, got ${describe(t)}` });
    return null;
  }
  const out: Record<string, unknown> = { ...t }; // unknown keys ride along unchecked
  if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
    issues.push({
      path: `${at}.name`,
      message: `${describe(t.name)} is not a tool name: ^[a-z][a-z0-9_]*$ (lowercase snake_case, e.g. list_payments)`,
    });
  }
  if (typeof t.description !== 'string' || !t.description.trim()) {
    issues.push({ path: `${at}.description`, message: 'must be a non-empty string the model reads' });
  }
  if (t.parameters !== undefined) out.parameters = checkParameters(t.parameters, `${at}.parameters`, issues);
  if (!('outputExample' in t) || !isPlainObject(t.outputExample)) {
    issues.push({
      path: `${at}.outputExample`,
      message: `must be an object (plain JSON), not a top-level array; got ${describe(t.outputExample)}`,
    });
  } else out.outputExample = jsonCopy(t.outputExample, `${at}.outputExample`, issues);
  if (typeof t.run !== 'function') issues.push({ path: `${at}.run`, message: 'must be a function run(ctx, args)' });
  return out;
}

/** Check an integration and return it deep-frozen; throws IntegrationDefinitionError listing every problem. */
export function defineIntegration<T extends IntegrationDefinition>(def: T): T {
  const issues: Issue[] = [];
  if (!isPlainObject(def)) {
    throw new IntegrationDefinitionError([{ path: '', message: `takes an object, got ${describe(def)}` }]);
  }
  const slug = def.slug;
  const slugOk = typeof slug === 'string' && slug.length <= LIMITS.slug && SLUG.test(slug) && !slug.endsWith('-');
  if (!slugOk) {
    issues.push({
      path: 'slug',
      message: `${describe(slug)} is not a slug: ^[a-z][a-z0-9-]*$, at most ${LIMITS.slug} characters, no trailing hyphen`,
    });
  } else if (DEVICES.has(slug)) {
    issues.push({
      path: 'slug',
      message: `"${slug}" is a Windows device name (CON, PRN, AUX, NUL, COM1-COM9 and LPT1-LPT9 are reserved): ` +
        'the slug names the integration\'s folder, which cannot be made there',
    });
  }
  let egress: readonly string[] = [];
  if (def.egress !== undefined) {
    if (!Array.isArray(def.egress)) issues.push({ path: 'egress', message: 'must be an array of host names' });
    else {
      def.egress.slice(0, LIMITS.tools).forEach((e, i) => {
        const problem = egressEntryProblem(e);
        if (problem) issues.push({ path: `egress.${i}`, message: problem });
      });
      if (def.egress.length > LIMITS.tools) issues.push({ path: 'egress', message: `more than ${LIMITS.tools} hosts` });
      egress = Object.freeze([...def.egress]);
    }
  }
  let storage: unknown = undefined;
  if (def.storage !== undefined) {
    const before = issues.length;
    if (!isPlainObject(def.storage)) issues.push({ path: 'storage', message: 'must be an object { account?: {…} }' });
    else {
      for (const k of Object.keys(def.storage)) {
        if (k !== 'account') issues.push({ path: 'storage', message: `unknown key "${k}"; allowed: account` });
      }
      const account = def.storage.account;
      if (account !== undefined && !isPlainObject(account)) {
        issues.push({ path: 'storage.account', message: 'must be an object { <key>: <JSON Schema> }' });
      } else if (account !== undefined) {
        for (const [k, schema] of Object.entries(account)) {
          const at = `storage.account.${k}`;
          if (!k || k.length > LIMITS.storageKey) {
            issues.push({ path: 'storage.account', message: `keys are 1–${LIMITS.storageKey} characters` });
          } else if (!isPlainObject(schema)) issues.push({ path: at, message: 'must be a JSON Schema object' });
        }
      }
      storage = issues.length > before ? null : jsonCopy(def.storage, 'storage', issues);
    }
  }
  const tools: Record<string, unknown>[] = [];
  if (!Array.isArray(def.tools) || def.tools.length === 0) {
    issues.push({ path: 'tools', message: 'must be a non-empty array of tools' });
  } else if (def.tools.length > LIMITS.tools) {
    issues.push({ path: 'tools', message: `more than ${LIMITS.tools} tools` });
  } else {
    const names = new Map<string, number>();
    const effective = new Map<string, number>();
    for (let i = 0; i < def.tools.length; i++) { // not forEach: it skips the holes of a sparse array
      const tool = checkTool(def.tools[i], i, issues);
      if (!tool) continue;
      tools.push(tool);
      const name = tool.name;
      if (typeof name !== 'string' || !TOOL_NAME.test(name)) continue;
      if (names.has(name)) {
        issues.push({ path: `tools.${i}.name`, message: `duplicate name "${name}" (also tools.${names.get(name)})` });
        continue;
      }
      names.set(name, i);
      if (!slugOk) continue;
      const eff = effectiveName(slug, name);
      if (effective.has(eff)) {
        issues.push({
          path: `tools.${i}.name`,
          message: `effective name "${eff}" collides with tools.${effective.get(eff)} (the slug prefix is added unless present)`,
        });
      } else effective.set(eff, i);
    }
  }
  if (issues.length) throw new IntegrationDefinitionError(issues.slice(0, LIMITS.issues));
  const out = Object.freeze({
    ...def,
    slug,
    ...(def.egress !== undefined ? { egress } : {}),
    ...(def.storage !== undefined ? { storage } : {}),
    tools: Object.freeze(tools.map((t) => Object.freeze(t))),
  });
  registry.add(out);
  return out as unknown as T;
}

const TOOL_KEYS = new Set(['name', 'description', 'parameters', 'outputExample', 'run']);

/** The JSON-safe summary the workbench reads (its describe step); throws unless isIntegration(x). */
export function describeIntegration(x: unknown): {
  slug: string;
  egress: string[];
  storage: Record<string, unknown> | null;
  tools: {
    index: number;
    name: string;
    effectiveName: string;
    description: string;
    parameters: JsonSchema | null;
    outputExample: Record<string, unknown>;
    extraKeys: string[];
  }[];
} {
  if (!isIntegration(x)) {
    throw new TypeError('describeIntegration: not an integration; the default export must be defineIntegration({...})');
  }
  const def = x as IntegrationDefinition;
  const copy = <V>(v: V): V => (v === undefined ? (null as V) : JSON.parse(JSON.stringify(v)));
  return {
    slug: def.slug,
    egress: [...(def.egress ?? [])],
    storage: copy(def.storage ?? null) as Record<string, unknown> | null,
    tools: def.tools.map((t, index) => ({
      index,
      name: t.name,
      effectiveName: effectiveName(def.slug, t.name),
      description: t.description,
      parameters: copy(t.parameters ?? null) as JsonSchema | null,
      outputExample: copy(t.outputExample),
      // keys the platform keeps but never reads (the workbench points at a likely misspelling)
      extraKeys: Object.keys(t).filter((k) => !TOOL_KEYS.has(k)).slice(0, 20),
    })),
  };
}
