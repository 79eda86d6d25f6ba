/** What a control-surface store (faults, stubs) holds at most: a count and the bytes of JSON. */
export interface Budget {
  maxCount: number;
  maxBytes: number;
}

/**
 * The JSON byte size of `input` when adding it keeps `held` within the budget (one more item,
 * their bytes together); undefined when it would not fit.
 */
export function roomFor(
  held: readonly { bytes: number }[],
  input: unknown,
  budget: Budget,
): number | undefined {
  if (held.length >= budget.maxCount) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(input));
  let total = bytes;
  for (const item of held) total += item.bytes;
  return total > budget.maxBytes ? undefined : bytes;
}
