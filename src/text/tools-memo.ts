/**
 * What was made of a request's tool definitions, remembered: an agent sends the same tools
 * every turn, and checking them and writing their JSON for the prompt would otherwise be
 * repeated on every request. A request's definitions are a fresh parse, so they are found by
 * comparing them with the remembered ones value by value (keys in order, as their JSON would
 * be written), which costs a fraction of writing the JSON to look it up by: a comparison with
 * other tools stops at the first name that differs.
 */

/** Whether two parsed JSON values would be written as the same JSON. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i] as string;
    if (key !== keysB[i]) return false;
    if (!sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) {
      return false;
    }
  }
  return true;
}

interface Remembered<V> {
  definitions: unknown;
  json: string;
  value: V;
}

/**
 * At most `limit` sets of definitions (the least recently used forgotten), each of at most
 * `maxJsonChars` of JSON; larger sets are read every time.
 */
export class ToolsMemo<V> {
  /** Most recently used first. */
  private readonly entries: Array<Remembered<V>> = [];

  constructor(
    private readonly limit: number,
    private readonly maxJsonChars: number,
  ) {}

  /** The definitions' JSON and what `read` makes of them, remembered or made now. */
  get(definitions: unknown, read: () => V): { json: string; value: V } {
    const entries = this.entries;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as Remembered<V>;
      if (!sameJson(entry.definitions, definitions)) continue;
      if (i > 0) {
        entries.splice(i, 1);
        entries.unshift(entry);
      }
      return entry;
    }
    const json = JSON.stringify(definitions);
    const value = read();
    if (json.length <= this.maxJsonChars) {
      entries.unshift({ definitions, json, value });
      if (entries.length > this.limit) entries.pop();
    }
    return { json, value };
  }
}
