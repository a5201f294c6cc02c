// State kept per session: the most recently used session last, at most
// MAX_SESSIONS of them, so a long-running OpenCode holds a bounded amount.

/** Sessions any per-session state is kept for, at most. */
export const MAX_SESSIONS = 256;

/** Sets `key` to `value` as the most recently used, dropping the least recently used past `max`; returns `value`. */
export function remember<V>(map: Map<string, V>, key: string, value: V, max = MAX_SESSIONS): V {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
  return value;
}

/** `key`'s value (made by `make` when there is none), now the most recently used. */
export function recent<V>(map: Map<string, V>, key: string, make: () => V, max = MAX_SESSIONS): V {
  const known = map.get(key);
  return remember(map, key, known !== undefined || map.has(key) ? (known as V) : make(), max);
}
