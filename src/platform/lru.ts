/**
 * Forgets the oldest entries of a Map kept in use order once it holds more than `limit`: down to
 * `limit` less a sixteenth, in one pass. One at a time would cost a scan of the holes earlier
 * deletions left at the Map's front on every insert (V8 compacts them only when it grows the
 * table): quadratic under a stream of new keys.
 */
export function trimOldest<K, V>(map: Map<K, V>, limit: number): void {
  if (map.size <= limit) return;
  let excess = map.size - (limit - (limit >> 4));
  for (const key of map.keys()) {
    if (excess-- <= 0) break;
    map.delete(key);
  }
}

/** A bounded map that forgets the least recently used entries. */
export class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly limit: number) {}
  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    trimOldest(this.map, this.limit);
  }
  clear(): void {
    this.map.clear();
  }
}
