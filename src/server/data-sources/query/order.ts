import { invalidQuery } from './errors.js';
import type { Direction, EntryRecord } from './types.js';
import { compileEntryColumn, numericValue } from './values.js';

/**
 * `order`: `[[column, 'ASC'|'DESC'], …]` where column is an entry field (`id`, `order`, `createdAt`,
 * `updatedAt`, …), `data.<column>` or a bare data column. Values sort numbers first (numbers and numeric
 * strings, compared as numbers), then other text (compared by UTF-16 code units, case-sensitive; booleans
 * and objects by their text), then null/missing: last in ASC, first in DESC (the exact reverse).
 * Ties fall back to the default order, `order` ASC then `id` DESC, so results are deterministic.
 */
export interface OrderKey {
  column: string;
  get: (entry: EntryRecord) => unknown;
  desc: boolean;
}

export const DEFAULT_ORDER: [string, Direction][] = [
  ['order', 'ASC'],
  ['id', 'DESC'],
];

/** Checks and compiles an `order` list (plus the default tie-breakers). */
export function compileOrder(order: unknown, field = 'order'): OrderKey[] {
  const pairs: [string, Direction][] = [];
  if (order !== undefined && order !== null) {
    if (!Array.isArray(order)) throw invalidQuery(`${field} must be an array of [column, 'ASC' | 'DESC'] pairs`);
    order.forEach((pair, i) => pairs.push(checkPair(pair, `${field}[${i}]`)));
  }
  const named = new Set(pairs.map(([column]) => column));
  for (const pair of DEFAULT_ORDER) if (!named.has(pair[0])) pairs.push(pair);
  return pairs.map(([column, direction]) => ({ column, get: compileEntryColumn(column), desc: direction === 'DESC' }));
}

export function checkPair(pair: unknown, field: string): [string, Direction] {
  if (!Array.isArray(pair) || pair.length < 1 || pair.length > 2) throw invalidQuery(`${field} must be [column, 'ASC' | 'DESC']`);
  const [column, direction = 'ASC'] = pair as unknown[];
  if (typeof column !== 'string' || column === '' || column === 'data.') throw invalidQuery(`${field}[0] must be a column name`);
  if (direction !== 'ASC' && direction !== 'DESC') throw invalidQuery(`${field}[1] must be ASC or DESC`);
  return [column, direction];
}

/** Sort keys of one column: rank 0 number, 1 text, 2 null/missing; UNKNOWN until computed. */
interface KeyColumn {
  rank: Uint8Array;
  num: Float64Array;
  text: (string | undefined)[];
  sign: number;
  entries: readonly EntryRecord[];
  get: (entry: EntryRecord) => unknown;
}

const UNKNOWN = 3;

function fillKey(c: KeyColumn, i: number): void {
  const value = c.get(c.entries[i]!);
  if (typeof value === 'number') {
    if (value === value) {
      c.rank[i] = 0;
      c.num[i] = value;
    } else c.rank[i] = 2;
  } else if (typeof value === 'string') {
    const parsed = numericValue(value);
    if (parsed === parsed) {
      c.rank[i] = 0;
      c.num[i] = parsed;
    } else {
      c.rank[i] = 1;
      c.text[i] = value;
    }
  } else if (value === null || value === undefined) {
    c.rank[i] = 2;
  } else {
    c.rank[i] = 1;
    c.text[i] = typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  }
}

/** The first column is computed for every entry up front; tie-breakers only when a tie needs them. */
function keyColumn(entries: readonly EntryRecord[], key: OrderKey, eager: boolean): KeyColumn {
  const n = entries.length;
  const c: KeyColumn = { rank: new Uint8Array(n), num: new Float64Array(n), text: new Array(n), sign: key.desc ? -1 : 1, entries, get: key.get };
  if (eager) for (let i = 0; i < n; i++) fillKey(c, i);
  else c.rank.fill(UNKNOWN);
  return c;
}

function comparator(columns: KeyColumn[]): (a: number, b: number) => number {
  const count = columns.length;
  return (a, b) => {
    for (let k = 0; k < count; k++) {
      const c = columns[k]!;
      if (c.rank[a] === UNKNOWN) fillKey(c, a);
      if (c.rank[b] === UNKNOWN) fillKey(c, b);
      const ra = c.rank[a]!;
      const rb = c.rank[b]!;
      if (ra !== rb) return (ra - rb) * c.sign;
      if (ra === 0) {
        const na = c.num[a]!;
        const nb = c.num[b]!;
        if (na !== nb) return na < nb ? -c.sign : c.sign;
      } else if (ra === 1) {
        const ta = c.text[a]!;
        const tb = c.text[b]!;
        if (ta !== tb) return ta < tb ? -c.sign : c.sign;
      }
    }
    return 0;
  };
}

/** The `k` smallest indices under `cmp`, sorted, via a bounded max-heap: O(n log k). */
function topK(n: number, k: number, cmp: (a: number, b: number) => number): number[] {
  const heap: number[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (cmp(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number) => {
    const size = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let largest = i;
      if (l < size && cmp(heap[l]!, heap[largest]!) > 0) largest = l;
      if (r < size && cmp(heap[r]!, heap[largest]!) > 0) largest = r;
      if (largest === i) return;
      [heap[i], heap[largest]] = [heap[largest]!, heap[i]!];
      i = largest;
    }
  };
  for (let i = 0; i < n; i++) {
    if (heap.length < k) {
      heap.push(i);
      up(heap.length - 1);
    } else if (cmp(i, heap[0]!) < 0) {
      heap[0] = i;
      down(0);
    }
  }
  return heap.sort(cmp);
}

/**
 * Sorts `entries` by `keys` (sort keys computed once per entry). With `firstK` only the first `firstK`
 * entries of the order are produced (partial sort), which is what `offset + limit` needs.
 */
export function sortEntries<T extends EntryRecord>(entries: readonly T[], keys: OrderKey[], firstK = 0): T[] {
  const n = entries.length;
  if (n === 0) return [];
  const cmp = comparator(keys.map((key, i) => keyColumn(entries, key, i === 0)));
  let order: ArrayLike<number>;
  if (firstK > 0 && firstK < n / 4) order = topK(n, firstK, cmp);
  else {
    const all = new Uint32Array(n);
    for (let i = 0; i < n; i++) all[i] = i;
    all.sort(cmp);
    order = firstK > 0 && firstK < n ? all.subarray(0, firstK) : all;
  }
  const out: T[] = new Array(order.length);
  for (let i = 0; i < order.length; i++) out[i] = entries[order[i]!]!;
  return out;
}
