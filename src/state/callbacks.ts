import type { Job, Queue, Worker } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import { keyOfOwner, sessionOfOwner } from '../harness/session.js';
import type { Clock, SetTimer } from '../platform/clock.js';
import type { Feature } from '../platform/features.js';
import { redactUrl } from '../platform/secrets.js';
import type { CallbackGuard } from '../video/callback-guard.js';
import {
  attemptPost,
  type CallbackOptions,
  type DeliveryState,
  type DeliveryView,
} from '../video/callbacks.js';
import type { TaskStatus } from '../video/schemas.js';
import { type Task, transitions } from '../video/tasks.js';
import type { Epoch } from './epoch.js';
import { deleteMatching, type StateStore } from './redis.js';

/** One status change of a task to tell its `callback_url`, in order. */
interface CallbackEvent {
  status: TaskStatus;
  /** Emulator time of the change. */
  at: number;
  /** A status set through the control surface (its message), not the timeline's. */
  forced?: { message: string };
  /** Its delivery record, once made. */
  delivery?: number;
}

/**
 * Appends events to a task's list and starts its courier if none runs. KEYS: none. ARGV:
 * prefix, task id, now, prune (1: drop pending timeline changes at or after now, as a forced
 * status does), then the events as JSON. Returns the courier's new generation, or 0 when one
 * runs (it will see the new events).
 */
const APPEND = `
local p, id, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local list, state = p .. 'ev:' .. id, p .. 't:' .. id
local next = tonumber(redis.call('HGET', state, 'next') or '0')
if ARGV[4] == '1' then
  local kept = {}
  for i, json in ipairs(redis.call('LRANGE', list, 0, -1)) do
    local event = cjson.decode(json)
    if i - 1 < next or event.forced or event.at < now then table.insert(kept, json) end
  end
  redis.call('DEL', list)
  if #kept > 0 then redis.call('RPUSH', list, unpack(kept)) end
end
for i = 5, #ARGV do redis.call('RPUSH', list, ARGV[i]) end
if redis.call('HGET', state, 'busy') == '1' then return 0 end
redis.call('HSET', state, 'busy', 1)
return redis.call('HINCRBY', state, 'gen', 1)
`;

/**
 * ARGV: prefix, task id. The courier stops when no event is left (1), else goes on (0); its
 * list goes with it (a status forced later starts a new one), so told tasks leave nothing.
 */
const FINISH = `
local p, id = ARGV[1], ARGV[2]
local next = tonumber(redis.call('HGET', p .. 't:' .. id, 'next') or '0')
if next < redis.call('LLEN', p .. 'ev:' .. id) then return 0 end
redis.call('DEL', p .. 'ev:' .. id, p .. 't:' .. id)
return 1
`;

/**
 * The delivery record of a task's next event, made once. ARGV: prefix, task id, event index,
 * session, key, url, now, most records, most waiting per key. Returns its id, or -1 when the
 * log or the key's queue is full (the notification is dropped, as in memory).
 */
const RECORD = `
local p, id, index = ARGV[1], ARGV[2], tonumber(ARGV[3])
local list = p .. 'ev:' .. id
local event = cjson.decode(redis.call('LINDEX', list, index))
if event.delivery then return event.delivery end
local waiting = p .. 'wait:' .. ARGV[5]
if tonumber(redis.call('GET', waiting) or '0') >= tonumber(ARGV[9]) then
  redis.call('INCR', p .. 'dropped')
  return -1
end
if redis.call('ZCARD', p .. 'list') >= tonumber(ARGV[8]) then
  local freed = false
  for _, old in ipairs(redis.call('ZRANGE', p .. 'list', 0, 63)) do
    local state = redis.call('HGET', p .. 'd:' .. old, 'state')
    if state == 'delivered' or state == 'failed' or not state then
      redis.call('DEL', p .. 'd:' .. old)
      redis.call('ZREM', p .. 'list', old)
      freed = true
      break
    end
  end
  if not freed then
    redis.call('INCR', p .. 'dropped')
    return -1
  end
end
local delivery = redis.call('INCR', p .. 'ids')
redis.call('HSET', p .. 'd:' .. delivery, 'task_id', id, 'session', ARGV[4], 'key', ARGV[5],
  'url', ARGV[6], 'task_status', event.status, 'state', 'pending', 'attempts', 0,
  'created_at', ARGV[7], 'updated_at', ARGV[7])
redis.call('ZADD', p .. 'list', delivery, delivery)
redis.call('INCR', waiting)
event.delivery = delivery
redis.call('LSET', list, index, cjson.encode(event))
return delivery
`;

const QUEUE = 'callbacks';

/** The longest each step of closing BullMQ's clients may take (the store may be gone). */
const CLOSE_STEP_MS = 2000;

/** How long a worker's claim of a task's courier lasts without renewal: a dead worker's passes on. */
export const CALLBACK_LOCK_MS = 5000;

/**
 * Video callbacks across replicas, on BullMQ (docs/replicas.md): each task
 * with a `callback_url` has one courier job, which tells its status changes one after another,
 * in order, each retried with backoff on the emulator clock. A job is held by one worker at a
 * time under a lock (BullMQ renews it while the worker lives); a worker killed mid-delivery
 * leaves the job stalled, and after CALLBACK_LOCK_MS another replica's worker takes it up where
 * the store says it was: a change the target acknowledged (2xx) is never sent again, and one
 * cut short is sent again, as after a timeout. Waits are BullMQ delays in real time, and each
 * due time is also kept in emulator time (`due`), so that a clock advance promotes at once
 * what became due.
 * @see https://docs.bullmq.io/patterns/process-step-jobs
 */
export class SharedCallbacks implements Feature {
  readonly name = 'callbacks';
  onAttempt: ((outcome: 'delivered' | 'failed' | 'retry') => void) | undefined;
  private readonly p: string;
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private readonly active = new Map<string, AbortController>();
  private idleWaiters: Array<() => void> = [];
  private readonly ticker: NodeJS.Timeout;

  constructor(
    /** BullMQ, loaded with the shared state (never at start-up in memory). */
    private readonly bull: typeof import('bullmq'),
    private readonly store: StateStore,
    private readonly epoch: Epoch,
    private readonly clock: Clock,
    private readonly setTimer: SetTimer,
    private readonly guard: CallbackGuard | undefined,
    private readonly options: CallbackOptions,
    /** The task's record at a time, as its callback body (JSON). */
    private readonly recordOf: (task: Task, at: number) => string,
    private readonly getTask: (id: string) => Promise<Task | undefined>,
  ) {
    this.p = store.key('cb:');
    const connection: RedisOptions = { ...store.options, enableAutoPipelining: false };
    this.queue = new bull.Queue(QUEUE, {
      connection,
      prefix: store.prefix,
      defaultJobOptions: {
        removeOnComplete: true,
        removeOnFail: true,
        // A courier that fails (the store down) tries again: its progress is in the store.
        attempts: 1_000_000,
        backoff: { type: 'fixed', delay: 1000 },
      },
    });
    this.queue.on('error', () => {});
    store.onReady(() => this.startWorker());
    // What became due while the promoting replica died, or by real time alone.
    this.ticker = setInterval(() => {
      if (!store.ready()) return;
      void epoch
        .fresh()
        .then(() => this.promoteDue())
        .catch(() => {});
    }, 1000);
    this.ticker.unref();
    // (a SharedClock awaits what its listeners return: the advance answers once promoted)
    clock.onChange(() => this.promoteDue().catch(() => {}));
  }

  /** Starts telling a new task's status changes (its timeline's two). */
  async track(task: Task): Promise<void> {
    const events = transitions(task).map(([at, status]) => ({ status, at }));
    await this.append(task.id, events, false, this.clock.now());
  }

  /** A status forced at `at`: the timeline's pending changes go, this one is told. */
  async forced(task: Task, status: TaskStatus, message: string, at: number): Promise<void> {
    await this.append(task.id, [{ status, at, forced: { message } }], true, at);
  }

  /** Promotes the couriers whose next step is due on the emulator clock. */
  async promoteDue(): Promise<void> {
    const now = this.clock.now();
    const due = await this.store.redis.zrangebyscore(`${this.p}due`, '-inf', now);
    for (const jobId of due) {
      await this.store.redis.zrem(`${this.p}due`, jobId);
      const job = await this.bull.Job.fromId(this.queue, jobId);
      await job?.promote().catch(() => {});
    }
  }

  async view(): Promise<{ list: DeliveryView[]; dropped: number }> {
    const ids = await this.store.redis.zrange(`${this.p}list`, 0, -1);
    const pipeline = this.store.redis.pipeline();
    for (const id of ids) pipeline.hgetall(`${this.p}d:${id}`);
    pipeline.get(`${this.p}dropped`);
    const read = (await pipeline.exec()) ?? [];
    const list: DeliveryView[] = [];
    ids.forEach((id, i) => {
      const d = read[i]?.[1] as Record<string, string> | undefined;
      if (!d?.task_id) return;
      list.push({
        id: Number(id),
        task_id: d.task_id,
        session: d.session ?? 'default',
        url: redactUrl(d.url ?? ''),
        task_status: d.task_status as TaskStatus,
        state: d.state as DeliveryState,
        attempts: Number(d.attempts ?? 0),
        last_status: d.last_status ? Number(d.last_status) : null,
        last_error: d.last_error || null,
        created_at: Number(d.created_at),
        updated_at: Number(d.updated_at),
      });
    });
    return { list, dropped: Number(read.at(-1)?.[1] ?? 0) };
  }

  /** Deliveries being attempted by this process now. */
  get inFlightCount(): number {
    return this.active.size;
  }

  /**
   * Resolves once no courier of any replica is waiting to run or running (the ones asleep until
   * a later change or a retry do not count), and this process attempts nothing.
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.active.size > 0)
        await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      const counts = await this.queue.getJobCounts('wait', 'active', 'prioritized', 'paused');
      if (Object.values(counts).every((n) => n === 0) && this.active.size === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** What this process was attempting (at shutdown): the store keeps it for the others. */
  pending(): string[] {
    return [...this.active.keys()].map((id) => `callback of task ${id}: handed back to the store`);
  }

  async reset(): Promise<void> {
    for (const abort of this.active.values()) abort.abort();
    await this.queue.obliterate({ force: true }).catch(() => {});
    await deleteMatching(this.store, 'cb:*');
  }

  async resetSession(session: string): Promise<void> {
    // The session's tasks are gone (their couriers end at their next step); its records go.
    const ids = await this.store.redis.zrange(`${this.p}list`, 0, -1);
    for (const id of ids) {
      const owner = await this.store.redis.hget(`${this.p}d:${id}`, 'session');
      if (owner !== session) continue;
      await this.store.redis.del(`${this.p}d:${id}`);
      await this.store.redis.zrem(`${this.p}list`, id);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.ticker);
    // (closed before their connections are up, BullMQ's clients reject with nobody to hear it;
    // with the store gone they would wait for it for ever: each step is bounded)
    const bounded = (step: Promise<unknown>) =>
      Promise.race([
        step.catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, CLOSE_STEP_MS).unref()),
      ]);
    if (this.worker) {
      await bounded(this.worker.waitUntilReady());
      await bounded(this.worker.close(!this.store.ready()));
    }
    await bounded(this.queue.waitUntilReady());
    await bounded(this.queue.close());
  }

  private async append(
    taskId: string,
    events: CallbackEvent[],
    prune: boolean,
    now: number,
  ): Promise<void> {
    const gen = (await this.store.script(
      APPEND,
      0,
      this.p,
      taskId,
      now,
      prune ? 1 : 0,
      ...events.map((e) => JSON.stringify(e)),
    )) as number;
    if (gen === 0) {
      // Its courier runs: it may sleep until a later change; this one may be due sooner.
      const jobId = await this.store.redis.hget(`${this.p}t:${taskId}`, 'job');
      const job = jobId === null ? undefined : await this.bull.Job.fromId(this.queue, jobId);
      await job?.promote().catch(() => {});
      return;
    }
    const first = events[0]?.at ?? now;
    const jobId = `t-${taskId}-${gen}`;
    await this.store.redis.hset(`${this.p}t:${taskId}`, 'job', jobId);
    await this.queue.add('courier', { taskId }, { jobId, delay: Math.max(0, first - now) });
    if (first > now) await this.store.redis.zadd(`${this.p}due`, first, jobId);
  }

  private startWorker(): void {
    if (this.worker) return;
    const connection: RedisOptions = {
      ...this.store.options,
      enableAutoPipelining: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      commandTimeout: undefined,
    };
    this.worker = new this.bull.Worker(QUEUE, (job, token) => this.run(job, token), {
      connection,
      prefix: this.store.prefix,
      concurrency: this.options.concurrency,
      lockDuration: CALLBACK_LOCK_MS,
      stalledInterval: CALLBACK_LOCK_MS,
      maxStalledCount: 1_000_000,
    });
    this.worker.on('error', () => {});
  }

  /** One task's courier: its events in order, each attempted until told or given up. */
  private async run(job: Job, token: string | undefined): Promise<void> {
    const taskId = (job.data as { taskId: string }).taskId;
    for (;;) {
      // A read of now: a courier woken by an advance must see the advance.
      await this.epoch.fresh();
      const now = this.clock.now();
      const state = await this.store.redis.hgetall(`${this.p}t:${taskId}`);
      const index = Number(state.next ?? 0);
      const json = await this.store.redis.lindex(`${this.p}ev:${taskId}`, index);
      if (json === null) {
        if ((await this.store.script(FINISH, 0, this.p, taskId)) === 1) return;
        continue;
      }
      const event = JSON.parse(json) as CallbackEvent;
      if (event.at > now) return this.later(job, token, event.at, now);
      const task = await this.getTask(taskId);
      if (!task?.callbackUrl) {
        // Gone (reset, evicted): nothing more to tell.
        await this.store.redis.multi().del(`${this.p}ev:${taskId}`, `${this.p}t:${taskId}`).exec();
        return;
      }
      const delivery = (await this.store.script(
        RECORD,
        0,
        this.p,
        taskId,
        index,
        sessionOfOwner(task.owner),
        keyOfOwner(task.owner),
        task.callbackUrl,
        now,
        this.options.limit,
        this.options.perKey,
      )) as number;
      if (delivery === -1) {
        await this.store.redis.hincrby(`${this.p}t:${taskId}`, 'next', 1);
        continue;
      }
      const shown = event.forced
        ? { ...task, forced: { status: event.status, message: event.forced.message, at: event.at } }
        : task;
      const retryAt = await this.attempt(delivery, task, this.recordOf(shown, event.at));
      if (retryAt !== undefined) return this.later(job, token, retryAt, this.clock.now());
      await this.store.redis.hincrby(`${this.p}t:${taskId}`, 'next', 1);
    }
  }

  /** The courier sleeps until `at` (emulator time): a BullMQ delay, promoted by an advance. */
  private async later(job: Job, token: string | undefined, at: number, now: number) {
    const taskId = (job.data as { taskId: string }).taskId;
    await this.store.redis
      .multi()
      .zadd(`${this.p}due`, at, job.id as string)
      .hset(`${this.p}t:${taskId}`, 'job', job.id as string)
      .exec();
    // BullMQ's delays run on the wall clock (its timestamps), the emulator's `due` on its own.
    const wall = performance.timeOrigin + performance.now();
    await job.moveToDelayed(Math.round(wall + Math.max(0, at - now)), token);
    throw new this.bull.DelayedError();
  }

  /** One attempt of a delivery; the emulator time of its retry, or undefined when it is over. */
  private async attempt(delivery: number, task: Task, body: string): Promise<number | undefined> {
    const key = `${this.p}d:${delivery}`;
    const attempts = await this.store.redis.hincrby(key, 'attempts', 1);
    await this.store.redis.hset(key, 'state', 'delivering');
    const controller = new AbortController();
    this.active.set(task.id, controller);
    let timedOut = false;
    const cancel = this.setTimer(() => {
      timedOut = true;
      controller.abort();
    }, this.options.timeoutMs);
    let outcome: Awaited<ReturnType<typeof attemptPost>>;
    try {
      outcome = await attemptPost(
        task.callbackUrl as string,
        body,
        this.guard,
        this.options.post,
        controller.signal,
      );
    } finally {
      cancel();
      this.active.delete(task.id);
      if (this.active.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
    const error = timedOut ? `timed out after ${this.options.timeoutMs} ms` : outcome.error;
    const now = this.clock.now();
    const over =
      error === null || outcome.permanent === true || attempts >= this.options.maxAttempts;
    const state: DeliveryState = error === null ? 'delivered' : over ? 'failed' : 'pending';
    const update = this.store.redis
      .multi()
      .hset(
        key,
        'state',
        state,
        'last_status',
        outcome.status ?? '',
        'last_error',
        error ?? '',
        'updated_at',
        now,
      );
    if (over) update.decr(`${this.p}wait:${keyOfOwner(task.owner)}`);
    await update.exec();
    this.onAttempt?.(over ? (state as 'delivered' | 'failed') : 'retry');
    return over ? undefined : now + this.options.backoffMs * 2 ** (attempts - 1);
  }
}
