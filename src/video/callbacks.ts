import { keyOfOwner, sessionOfOwner } from '../harness/session.js';
import type { Clock, SetTimer } from '../platform/clock.js';
import type { Feature } from '../platform/features.js';
import type { Scheduler } from '../platform/scheduler.js';
import { redactUrl } from '../platform/secrets.js';
import { type CallbackGuard, REFUSED_SELF } from './callback-guard.js';
import { httpPost, type Post } from './callback-post.js';
import type { TaskStatus } from './schemas.js';

/**
 * Delivers video-task callbacks (https://kling.ai/document-api/apiReference/callbackProtocol):
 * POSTs the flat task record to the task's `callback_url`, with a timeout and retries with
 * exponential backoff on the emulator clock. Delivery never blocks a request.
 *
 * Fair and bounded whatever the targets do: the notifications of one task go out in order, one
 * at a time; keys take turns for the delivery slots (round robin), a target host gets at most
 * `perHost` of them, and each key may have at most `perKey` notifications waiting. A key is a
 * key whatever sessions it names: sessions share its turn and its share. Each attempt
 * holds its own timer (an `AbortSignal.timeout` can be collected before it fires), so a target
 * that never answers frees its slot after `timeoutMs`. Redirects are not followed, and the
 * guard keeps callbacks away from the emulator itself.
 */

export type DeliveryState = 'pending' | 'delivering' | 'delivered' | 'failed';

interface Delivery {
  id: number;
  taskId: string;
  owner: string;
  /** The owner's key: what takes turns and has a share. */
  key: string;
  url: string;
  host: string;
  status: TaskStatus;
  body: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  state: DeliveryState;
  createdAt: number;
  updatedAt: number;
  /** Cancels the scheduled retry, while one waits. */
  cancelRetry?: () => void;
}

export interface DeliveryView {
  id: number;
  task_id: string;
  session: string;
  url: string;
  task_status: TaskStatus;
  state: DeliveryState;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface CallbackOptions {
  timeoutMs: number;
  maxAttempts: number;
  /** First retry after this long; each later one waits twice as long. */
  backoffMs: number;
  /** Deliveries remembered (and queued) at most. */
  limit: number;
  /** Requests in flight at once; the rest wait their turn. */
  concurrency: number;
  /** Requests in flight at once to one target host. */
  perHost: number;
  /** Notifications one key may have waiting (not yet delivered or failed). */
  perKey: number;
  /** Sends one notification (node:http(s) through the guard's lookup; tests may pass their own). */
  post?: Post;
}

export const DEFAULT_CALLBACK_OPTIONS: CallbackOptions = {
  timeoutMs: 5000,
  maxAttempts: 5,
  backoffMs: 1000,
  limit: 1000,
  concurrency: 8,
  perHost: 2,
  perKey: 200,
};

const hostOf = (url: string) => {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return url;
  }
};

/** What the app, the control surface and a drain ask of the callbacks, in memory or shared. */
export interface CallbackLog extends Feature {
  onAttempt: ((outcome: 'delivered' | 'failed' | 'retry') => void) | undefined;
  /** The deliveries, oldest first, and how many were dropped. */
  view():
    | { list: DeliveryView[]; dropped: number }
    | Promise<{ list: DeliveryView[]; dropped: number }>;
  /** Resolves once this process attempts none. */
  idle(): Promise<void>;
  /** What this process leaves unfinished, a line each (at shutdown). */
  pending(): string[];
  readonly inFlightCount: number;
}

export class Callbacks implements CallbackLog {
  readonly name = 'callbacks';
  private readonly deliveries = new Map<number, Delivery>();
  /** Deliveries of one task go out one after another, in order; the head is the active one. */
  private readonly perTask = new Map<string, Delivery[]>();
  /** Deliveries ready to go, per key (of any session); keys take turns in `turns` order. */
  private readonly ready = new Map<string, Delivery[]>();
  private turns: string[] = [];
  private turn = 0;
  private readonly inFlight = new Map<Delivery, () => void>();
  private readonly hostLoad = new Map<string, number>();
  /** Unfinished notifications per key (of any session). */
  private readonly waiting = new Map<string, number>();
  /** Notifications refused because the log or the key's queue was full. */
  dropped = 0;
  /** Told how each attempt ended (metrics). */
  onAttempt: ((outcome: 'delivered' | 'failed' | 'retry') => void) | undefined;
  private nextId = 1;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly setTimer: SetTimer,
    private readonly guard: CallbackGuard | undefined,
    private readonly options: CallbackOptions = DEFAULT_CALLBACK_OPTIONS,
  ) {}

  /**
   * Queues one notification of `owner`'s task (its key takes turns with other keys);
   * `body` is the JSON text to POST.
   */
  enqueue(taskId: string, owner: string, url: string, status: TaskStatus, body: string): void {
    const key = keyOfOwner(owner);
    if ((this.waiting.get(key) ?? 0) >= this.options.perKey || !this.makeRoom()) {
      this.dropped++;
      return;
    }
    const now = this.clock.now();
    const delivery: Delivery = {
      id: this.nextId++,
      taskId,
      owner,
      key,
      url,
      host: hostOf(url),
      status,
      body,
      attempts: 0,
      lastStatus: null,
      lastError: null,
      state: 'pending',
      createdAt: now,
      updatedAt: now,
    };
    this.deliveries.set(delivery.id, delivery);
    this.waiting.set(key, (this.waiting.get(key) ?? 0) + 1);
    const queue = this.perTask.get(taskId);
    if (queue) {
      queue.push(delivery);
      return;
    }
    this.perTask.set(taskId, [delivery]);
    this.makeReady(delivery);
  }

  /** The deliveries, oldest first, and how many were refused (full log or key queue). */
  view(): { list: DeliveryView[]; dropped: number } {
    return { list: this.list(), dropped: this.dropped };
  }

  list(): DeliveryView[] {
    return [...this.deliveries.values()].map((d) => ({
      id: d.id,
      task_id: d.taskId,
      session: sessionOfOwner(d.owner),
      url: redactUrl(d.url),
      task_status: d.status,
      state: d.state,
      attempts: d.attempts,
      last_status: d.lastStatus,
      last_error: d.lastError,
      created_at: d.createdAt,
      updated_at: d.updatedAt,
    }));
  }

  /** Unfinished deliveries, one line each (for the log at shutdown); URLs redacted. */
  pending(): string[] {
    const out: string[] = [];
    for (const d of this.deliveries.values()) {
      if (d.state === 'delivered' || d.state === 'failed') continue;
      const tried = d.attempts === 0 ? 'not attempted' : `${d.attempts} attempts`;
      out.push(`callback of task ${d.taskId} (${d.status}) to ${redactUrl(d.url)}: ${tried}`);
    }
    return out;
  }

  /** Deliveries being attempted now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Resolves once no request is in flight or ready (retries scheduled later do not count). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  reset(): void {
    for (const delivery of this.deliveries.values()) delivery.cancelRetry?.();
    for (const abort of this.inFlight.values()) abort();
    this.inFlight.clear();
    this.ready.clear();
    this.turns = [];
    this.turn = 0;
    this.hostLoad.clear();
    this.waiting.clear();
    this.deliveries.clear();
    this.perTask.clear();
    this.dropped = 0;
    this.settle();
  }

  /** Forgets one session's deliveries: retries cancelled, attempts in flight aborted. */
  resetSession(session: string): void {
    for (const delivery of [...this.deliveries.values()]) {
      if (sessionOfOwner(delivery.owner) !== session) continue;
      delivery.cancelRetry?.();
      const abort = this.inFlight.get(delivery);
      if (abort) {
        this.inFlight.delete(delivery);
        abort();
        this.unload(delivery.host);
      }
      this.deliveries.delete(delivery.id);
      this.perTask.delete(delivery.taskId);
      if (delivery.state === 'pending' || delivery.state === 'delivering') this.settled(delivery);
    }
    for (const [key, queue] of this.ready) {
      const kept = queue.filter((d) => sessionOfOwner(d.owner) !== session);
      if (kept.length > 0) this.ready.set(key, kept);
      else this.ready.delete(key);
    }
    this.turns = this.turns.filter((key) => this.ready.has(key));
    this.pump();
    this.settle();
  }

  close(): void {
    this.reset();
  }

  /** One notification of the delivery's key no longer waits. */
  private settled(delivery: Delivery): void {
    const left = (this.waiting.get(delivery.key) ?? 1) - 1;
    if (left > 0) this.waiting.set(delivery.key, left);
    else this.waiting.delete(delivery.key);
  }

  private unload(host: string): void {
    const load = (this.hostLoad.get(host) ?? 1) - 1;
    if (load > 0) this.hostLoad.set(host, load);
    else this.hostLoad.delete(host);
  }

  private isIdle(): boolean {
    return this.inFlight.size === 0 && this.ready.size === 0;
  }

  private makeReady(delivery: Delivery): void {
    let queue = this.ready.get(delivery.key);
    if (!queue) {
      queue = [];
      this.ready.set(delivery.key, queue);
      this.turns.push(delivery.key);
    }
    queue.push(delivery);
    this.pump();
  }

  /** Starts ready deliveries while slots are free: keys in turn, hosts within their share. */
  private pump(): void {
    while (this.inFlight.size < this.options.concurrency && this.turns.length > 0) {
      let started = false;
      for (let tried = 0; tried < this.turns.length && !started; tried++) {
        this.turn %= this.turns.length;
        const key = this.turns[this.turn] as string;
        this.turn++;
        const queue = this.ready.get(key) as Delivery[];
        const at = queue.findIndex((d) => (this.hostLoad.get(d.host) ?? 0) < this.options.perHost);
        if (at === -1) continue;
        const [delivery] = queue.splice(at, 1) as [Delivery];
        if (queue.length === 0) {
          this.ready.delete(key);
          this.turns = this.turns.filter((k) => k !== key);
        }
        this.start(delivery);
        started = true;
      }
      if (!started) return;
    }
  }

  private start(delivery: Delivery): void {
    const controller = new AbortController();
    let timedOut = false;
    const cancelTimeout = this.setTimer(() => {
      timedOut = true;
      controller.abort();
    }, this.options.timeoutMs);
    this.inFlight.set(delivery, () => {
      cancelTimeout();
      controller.abort();
    });
    this.hostLoad.set(delivery.host, (this.hostLoad.get(delivery.host) ?? 0) + 1);
    delivery.state = 'delivering';
    delivery.attempts++;
    void attemptPost(
      delivery.url,
      delivery.body,
      this.guard,
      this.options.post,
      controller.signal,
    ).then(({ status, error, permanent }) => {
      cancelTimeout();
      this.finish(
        delivery,
        status,
        timedOut ? `timed out after ${this.options.timeoutMs} ms` : error,
        permanent,
      );
    });
  }

  private finish(
    delivery: Delivery,
    status: number | null,
    error: string | null,
    permanent = false,
  ): void {
    if (!this.inFlight.has(delivery)) return; // reset meanwhile
    this.inFlight.delete(delivery);
    this.unload(delivery.host);
    delivery.lastStatus = status;
    delivery.lastError = error;
    delivery.updatedAt = this.clock.now();
    if (error === null || permanent || delivery.attempts >= this.options.maxAttempts) {
      delivery.state = error === null ? 'delivered' : 'failed';
      this.onAttempt?.(delivery.state);
      this.settled(delivery);
      this.startNextOf(delivery.taskId);
    } else {
      delivery.state = 'pending';
      this.onAttempt?.('retry');
      const wait = this.options.backoffMs * 2 ** (delivery.attempts - 1);
      delivery.cancelRetry = this.scheduler.at(this.clock.now() + wait, () => {
        delivery.cancelRetry = undefined;
        this.makeReady(delivery);
      });
    }
    this.pump();
    this.settle();
  }

  private settle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private startNextOf(taskId: string): void {
    const queue = this.perTask.get(taskId);
    queue?.shift();
    const next = queue?.[0];
    if (next) this.makeReady(next);
    else this.perTask.delete(taskId);
  }

  /** Keeps the log within `limit` by forgetting the oldest finished deliveries. */
  private makeRoom(): boolean {
    if (this.deliveries.size < this.options.limit) return true;
    for (const delivery of this.deliveries.values()) {
      if (delivery.state === 'delivered' || delivery.state === 'failed') {
        this.deliveries.delete(delivery.id);
        if (this.deliveries.size < this.options.limit) return true;
      }
    }
    return false;
  }
}

/** How one attempt ended: the target's status, or the error; `permanent`: never retried. */
export interface Attempt {
  status: number | null;
  error: string | null;
  permanent?: boolean;
}

/**
 * One attempt to POST a callback: refused by the guard (for good), answered (2xx delivered; a
 * redirect is not followed), or failed on the way (the error, retried by the caller).
 */
export async function attemptPost(
  url: string,
  body: string,
  guard: CallbackGuard | undefined,
  post: Post | undefined,
  signal: AbortSignal,
): Promise<Attempt> {
  const refused = guard?.check(url);
  if (refused) return { status: null, error: `refused: callback_url ${refused}`, permanent: true };
  const lookup = guard?.lookupFor(url);
  try {
    const status = await (post ?? httpPost)(url, body, signal, lookup);
    if (status >= 200 && status < 300) return { status, error: null };
    const redirect = status >= 300 && status < 400;
    return {
      status,
      error: redirect ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`,
    };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    if (code === REFUSED_SELF) return { status: null, error: message, permanent: true };
    return {
      status: null,
      error: typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message,
    };
  }
}
