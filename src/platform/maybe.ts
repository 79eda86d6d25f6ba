/** A value, or the promise of one: the memory stores answer at once, the shared ones later. */
export type Maybe<T> = T | Promise<T>;

/** `then` on a value now (no microtask, the memory stores' fast path) or on its promise. */
export const after = <T, R>(value: Maybe<T>, then: (value: T) => R): Maybe<R> =>
  value instanceof Promise ? value.then(then) : then(value);

/**
 * For callback-style hooks: `next` with the value, now or once it comes; a rejection goes to
 * `failed` (the hook's `done`).
 */
export function whenReady<T>(
  value: Maybe<T>,
  next: (value: T) => void,
  failed: (err: Error) => void,
): void {
  if (value instanceof Promise) value.then(next, (err: unknown) => failed(err as Error));
  else next(value);
}

/** Waits for whichever of `values` are promises; nothing to wait for: undefined. */
export function allOf(...values: unknown[]): Promise<void> | undefined {
  const waits = values.filter((v): v is Promise<unknown> => v instanceof Promise);
  return waits.length === 0 ? undefined : Promise.all(waits).then(() => {});
}
