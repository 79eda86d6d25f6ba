import { customAlphabet } from 'nanoid';

export type IdKind =
  | 'request'
  | 'chat'
  | 'message'
  | 'task'
  | 'tool_use'
  | 'server_tool_use'
  | 'tool_call';

export interface Ids {
  next(kind: IdKind): string;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const randomBase62 = customAlphabet(BASE62);
const digits = customAlphabet('0123456789', 17);

/** Fixed-width base62 of a non-negative integer. */
function toBase62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * Production ids, shaped like the upstream ones: a random per-process stem plus a counter, so
 * they are unique, never repeat within a run, and cost almost nothing on the hot path.
 */
export function createIds(): Ids {
  const stem = randomBase62(21);
  const short = stem.slice(0, 16);
  const taskStem = `8${digits().slice(0, 8)}`;
  let counter = 0;
  const tail = (width: number) => toBase62(++counter, width);
  return {
    next(kind) {
      switch (kind) {
        case 'request':
          return `req_${short}${tail(8)}`;
        case 'chat':
          return `chatcmpl-${stem}${tail(8)}`;
        case 'message':
          return `msg_${short}${tail(8)}`;
        case 'tool_use':
          return `toolu_${short}${tail(8)}`;
        case 'server_tool_use':
          return `srvtoolu_${short}${tail(8)}`;
        case 'tool_call':
          return `call_${short}${tail(8)}`;
        case 'task':
          return `${taskStem}${String(++counter).padStart(9, '0').slice(-9)}`;
      }
    },
  };
}
