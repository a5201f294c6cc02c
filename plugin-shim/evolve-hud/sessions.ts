// State kept per session: the most recently used session last, at most
// MAX_SESSIONS of them, so a long-running OpenCode holds a bounded amount.

/** Sessions any per-session state is kept for, at most. */
export const MAX_SESSIONS = 256;

/** Sets `key` to `value` as the most recently used, dropping the least recently used past `max`; returns `value`. */
export function remember<V>(map: Map<string, V>, key: string, value: V, max = MAX_SESSIONS): V {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value!);
  return value;
}

/** `key`'s value (made by `make` when there is none), now the most recently used. */
export function recent<V>(map: Map<string, V>, key: string, make: () => V, max = MAX_SESSIONS): V {
  return remember(map, key, map.has(key) ? map.get(key)! : make(), max);
}
