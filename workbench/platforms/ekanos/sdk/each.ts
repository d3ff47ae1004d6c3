// `.each` tables and titles as vitest builds them: rows of an array (an array row is spread into
// the arguments), or a tagged template whose first line names the columns (each row an object);
// titles take printf's %s %d %i %f %j %o %O %c %%, %# (the row's index), %$ (index + 1), and
// `$name` / `$a.b` from an object row (`$0`, `$1` from an array row), as vitest 4's formatTitle.

function isTemplate(t: unknown): t is TemplateStringsArray {
  return Array.isArray(t) && Array.isArray((t as unknown as TemplateStringsArray).raw);
}

/** Each row's arguments, for `.each(table)` or `.each\`a | b ${1} | ${2}\``. */
export function eachRows(table: unknown, values: unknown[]): unknown[][] {
  if (isTemplate(table)) {
    const heads = table.join('').split('\n')[0] ?? '';
    const cols = table[0].split('|').map((h) => h.trim()).filter(Boolean);
    if (!cols.length) throw new TypeError(`.each\`…\`: the first line must name the columns, e.g. "a | b | expected", got ${JSON.stringify(heads)}`);
    if (values.length % cols.length) {
      throw new TypeError(`.each\`…\`: ${values.length} values do not fill rows of ${cols.length} columns (${cols.join(', ')})`);
    }
    const rows: unknown[][] = [];
    for (let i = 0; i < values.length; i += cols.length) {
      const row = Object.fromEntries(cols.map((c, j) => [c, values[i + j]]));
      rows.push([row]);
    }
    return rows;
  }
  if (!Array.isArray(table)) throw new TypeError(`.each() takes an array or a tagged template, got ${typeof table}`);
  return table.map((row) => (Array.isArray(row) ? row : [row]));
}

/** A value as vitest's inspect (loupe) shows it: strings single-quoted, 0 as +0. Objects go
 * through Deno.inspect, whose quoting of nested strings differs (docs/readings.md). */
function inspect(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'number' && v === 0) return 1 / v < 0 ? '-0' : '+0';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return `[Function ${v.name || '(anonymous)'}]`;
  return Deno.inspect(v, { depth: 4, colors: false, compact: true, breakLength: Infinity });
}

/** vitest's objDisplay: inspect, with long arrays and objects cut to a summary (40 characters). */
function display(v: unknown): string {
  const str = inspect(v);
  if (str.length < 40) return str;
  if (typeof v === 'function') return v.name ? `[Function: ${v.name}]` : '[Function]';
  if (Array.isArray(v)) return `[ Array(${v.length}) ]`;
  if (Object.prototype.toString.call(v) === '[object Object]') {
    const keys = Object.keys(v as object);
    return `{ Object (${keys.length > 2 ? `${keys.slice(0, 2).join(', ')}, ...` : keys.join(', ')}) }`;
  }
  return str;
}

const extra = (x: unknown): string => (x === null || typeof x !== 'object' ? ` ${String(x)}` : ` ${inspect(x)}`);

/** One placeholder with its argument, as vitest's format(placeholder, arg) renders it. */
function placeholder(p: string, v: unknown): string {
  switch (p) {
    case '%%': return `%${extra(v)}`; // vitest gives %% an argument too, appended after the '%'
    case '%s':
      if (typeof v === 'bigint') return `${v}n`;
      if (Object.is(v, -0)) return '-0';
      if (typeof v === 'object' && v !== null) return v.toString !== Object.prototype.toString ? String(v) : inspect(v);
      return String(v);
    case '%d': return typeof v === 'bigint' ? `${v}n` : typeof v === 'symbol' ? 'NaN' : String(Number(v));
    case '%i': return typeof v === 'bigint' ? `${v}n` : String(Number.parseInt(String(v)));
    case '%f': return String(Number.parseFloat(String(v)));
    case '%j': return String(JSON.stringify(v));
    case '%c': return '';
    default: return inspect(v); // %o %O
  }
}

const attr = (source: unknown, path: string, fallback?: unknown): unknown => {
  let v = source;
  for (const k of path.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    v = (new Object(v) as Record<string, unknown>)[k];
    if (v === undefined) return fallback;
  }
  return v;
};

/** A `.each` case's title, as vitest's formatTitle builds it from the row's arguments. */
export function eachTitle(name: string, args: unknown[], index: number): string {
  let template = name;
  if (template.includes('%#') || template.includes('%$')) {
    template = template.replace(/%%/g, '\u0000').replace(/%#/g, String(index)).replace(/%\$/g, String(index + 1)).replace(/\u0000/g, '%%');
  }
  const first = args[0];
  const isObjectRow = Object.prototype.toString.call(first) === '[object Object]';
  const dollars = (text: string) =>
    text.replace(/\$([$\w.]+)/g, (whole, key: string) => {
      const isIndex = /^\d+$/.test(key);
      if (!isObjectRow && !isIndex) return whole;
      const element = isIndex ? attr(args, key) : undefined;
      return display(isObjectRow ? attr(first, key, element) : element);
    });
  let out = '';
  let last = 0;
  let i = 0;
  for (const m of template.matchAll(/%[sdjifoOc%]/g)) {
    out += dollars(template.slice(last, m.index)) + placeholder(m[0], args[i++]);
    last = m.index! + m[0].length;
  }
  return out + dollars(template.slice(last));
}
