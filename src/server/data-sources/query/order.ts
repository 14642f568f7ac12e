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

/** Precomputed sort keys of one column: rank 0 number, 1 text, 2 null/missing. */
interface KeyColumn {
  rank: Uint8Array;
  num: Float64Array;
  text: (string | undefined)[];
  sign: number;
}

function keyColumn(entries: readonly EntryRecord[], key: OrderKey): KeyColumn {
  const n = entries.length;
  const rank = new Uint8Array(n);
  const num = new Float64Array(n);
  const text: (string | undefined)[] = new Array(n);
  const get = key.get;
  for (let i = 0; i < n; i++) {
    const value = get(entries[i]!);
    if (typeof value === 'number') {
      if (value === value) num[i] = value;
      else rank[i] = 2;
    } else if (typeof value === 'string') {
      const parsed = numericValue(value);
      if (parsed === parsed) num[i] = parsed;
      else {
        rank[i] = 1;
        text[i] = value;
      }
    } else if (value === null || value === undefined) {
      rank[i] = 2;
    } else {
      rank[i] = 1;
      text[i] = typeof value === 'boolean' ? String(value) : JSON.stringify(value);
    }
  }
  return { rank, num, text, sign: key.desc ? -1 : 1 };
}

function comparator(columns: KeyColumn[]): (a: number, b: number) => number {
  const count = columns.length;
  return (a, b) => {
    for (let k = 0; k < count; k++) {
      const c = columns[k]!;
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
  const cmp = comparator(keys.map((key) => keyColumn(entries, key)));
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
