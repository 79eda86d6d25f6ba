import type { Clock } from '../platform/clock.js';
import type { Feature } from '../platform/features.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { TaskStatus } from './schemas.js';

/**
 * Delivers video-task callbacks (https://kling.ai/document-api/apiReference/callbackProtocol): POSTs the flat task record to the task's
 * `callback_url`, with a timeout and retries with exponential backoff on the emulator clock.
 * Delivery never blocks a request; the log of deliveries is bounded.
 */

export type DeliveryState = 'pending' | 'delivering' | 'delivered' | 'failed';

interface Delivery {
  id: number;
  taskId: string;
  url: string;
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
  /** The HTTP client (global fetch; tests may pass their own). */
  fetch: typeof fetch;
}

export const DEFAULT_CALLBACK_OPTIONS: CallbackOptions = {
  timeoutMs: 5000,
  maxAttempts: 5,
  backoffMs: 1000,
  limit: 1000,
  concurrency: 8,
  fetch: (input, init) => fetch(input, init),
};

export class Callbacks implements Feature {
  readonly name = 'callbacks';
  private readonly deliveries = new Map<number, Delivery>();
  /** Deliveries of one task go out one after another, in order; the head is the active one. */
  private readonly perTask = new Map<string, Delivery[]>();
  private readonly waiting: Delivery[] = [];
  /** Notifications refused because the log was full of unfinished deliveries. */
  dropped = 0;
  private readonly inFlight = new Map<Delivery, AbortController>();
  private nextId = 1;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly options: CallbackOptions = DEFAULT_CALLBACK_OPTIONS,
  ) {}

  /** Queues one notification; `body` is the JSON text to POST. */
  enqueue(taskId: string, url: string, status: TaskStatus, body: string): void {
    if (!this.makeRoom()) {
      this.dropped++;
      return;
    }
    const now = this.clock.now();
    const delivery: Delivery = {
      id: this.nextId++,
      taskId,
      url,
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
    const queue = this.perTask.get(taskId);
    if (queue) {
      queue.push(delivery);
      return;
    }
    this.perTask.set(taskId, [delivery]);
    this.start(delivery);
  }

  list(): DeliveryView[] {
    return [...this.deliveries.values()].map((d) => ({
      id: d.id,
      task_id: d.taskId,
      url: d.url,
      task_status: d.status,
      state: d.state,
      attempts: d.attempts,
      last_status: d.lastStatus,
      last_error: d.lastError,
      created_at: d.createdAt,
      updated_at: d.updatedAt,
    }));
  }

  /** Resolves once no request is in flight or waiting (retries scheduled later do not count). */
  idle(): Promise<void> {
    if (this.inFlight.size === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  reset(): void {
    for (const delivery of this.deliveries.values()) delivery.cancelRetry?.();
    for (const controller of this.inFlight.values()) controller.abort();
    this.inFlight.clear();
    this.waiting.length = 0;
    this.deliveries.clear();
    this.perTask.clear();
    this.dropped = 0;
    this.settle();
  }

  close(): void {
    this.reset();
  }

  private start(delivery: Delivery): void {
    if (this.inFlight.size >= this.options.concurrency) {
      this.waiting.push(delivery);
      return;
    }
    const controller = new AbortController();
    this.inFlight.set(delivery, controller);
    delivery.state = 'delivering';
    delivery.attempts++;
    this.options
      .fetch(delivery.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: delivery.body,
        signal: AbortSignal.any([controller.signal, AbortSignal.timeout(this.options.timeoutMs)]),
      })
      .then(
        async (res) => {
          await res.body?.cancel();
          this.finish(delivery, controller, res.status, res.ok ? null : `HTTP ${res.status}`);
        },
        (err: unknown) => {
          const cause = (err as { cause?: { code?: string } }).cause?.code;
          const message = err instanceof Error ? err.message : String(err);
          this.finish(delivery, controller, null, cause ? `${message} (${cause})` : message);
        },
      );
  }

  private finish(
    delivery: Delivery,
    controller: AbortController,
    status: number | null,
    error: string | null,
  ) {
    if (this.inFlight.get(delivery) !== controller) return; // cleared meanwhile
    this.inFlight.delete(delivery);
    delivery.lastStatus = status;
    delivery.lastError = error;
    delivery.updatedAt = this.clock.now();
    if (error === null || delivery.attempts >= this.options.maxAttempts) {
      delivery.state = error === null ? 'delivered' : 'failed';
      this.startNextOf(delivery.taskId);
    } else {
      delivery.state = 'pending';
      const wait = this.options.backoffMs * 2 ** (delivery.attempts - 1);
      delivery.cancelRetry = this.scheduler.at(this.clock.now() + wait, () => {
        delivery.cancelRetry = undefined;
        this.start(delivery);
      });
    }
    const next = this.waiting.shift();
    if (next) this.start(next);
    this.settle();
  }

  private settle(): void {
    if (this.inFlight.size > 0 || this.waiting.length > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private startNextOf(taskId: string): void {
    const queue = this.perTask.get(taskId);
    queue?.shift();
    const next = queue?.[0];
    if (next) this.start(next);
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
