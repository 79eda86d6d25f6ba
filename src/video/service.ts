import { timingSafeEqual } from 'node:crypto';
import { shownKeyHash } from '../harness/journal.js';
import { keyOfOwner, sessionOfOwner } from '../harness/session.js';
import { fieldError } from '../platform/errors.js';
import type { Feature } from '../platform/features.js';
import type { Ids } from '../platform/ids.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Callbacks } from './callbacks.js';
import type { VideoKind } from './models.js';
import type { TaskSpec } from './rules.js';
import type { CreatedTask, TaskRecord, TaskStatus } from './schemas.js';
import {
  CONTENT_SAFETY_MESSAGE,
  createdTask,
  mediaToken,
  type Outcome,
  statusAt,
  type Task,
  TaskStore,
  type Tasks,
  taskIdOfVideo,
  taskRecord,
  transitions,
} from './tasks.js';

/** Tells a task's status changes to its `callback_url` (the shared one, on BullMQ). */
export interface Courier {
  track(task: Task): Promise<void>;
  forced(task: Task, status: TaskStatus, message: string, at: number): Promise<void>;
}

export interface VideoSettings {
  /** Time a task spends `submitted`, then `processing`. */
  queueMs: number;
  renderMs: number;
  maxTasks: number;
}

/** How far a task is on its timeline, in percent (a forced final status is 100). */
function progressOf(task: Task, now: number): number {
  const view = statusAt(task, now);
  if (view.status === 'succeed' || view.status === 'failed') return 100;
  const total = task.queueMs + task.renderMs;
  if (total <= 0) return 100;
  return Math.max(0, Math.min(99, Math.floor(((now - task.createdAt) / total) * 100)));
}

/**
 * The video group's one door: every route and the control surface go through it. Tasks live on
 * the emulator clock; each caller passes the `now` its request read once. Each automatic status
 * change of a task with a `callback_url` is a scheduler job that notifies it.
 */
export class VideoService implements Feature {
  readonly name = 'tasks';
  private readonly store: Tasks;
  private readonly baseUrls = new Map<string, string>();
  /** Cancels the callback jobs still due for a task, so evicted tasks leave nothing behind. */
  private readonly pendingJobs = new Map<string, Array<() => void>>();
  /**
   * A task's media token (an HMAC), made when its result URL is first shown or checked rather
   * than at creation: most tasks are created far more often than their results are fetched.
   */
  private readonly tokenOf = (task: Task): string => {
    task.token ??= mediaToken(this.secret(), task.id);
    return task.token;
  };

  constructor(
    private readonly settings: VideoSettings,
    private readonly ids: Ids,
    private readonly scheduler: Scheduler,
    private readonly callbacks: Callbacks,
    /** Signs result URLs (read at each use: a shared store's comes once it is connected). */
    private readonly secret: () => Buffer,
    /** Where tasks are held; in memory unless given. */
    store?: (onEvict: (task: Task) => void) => Tasks,
    /** Shared state: who tells tasks' status changes across replicas (instead of the scheduler). */
    private readonly courier?: Courier,
  ) {
    const onEvict = (task: Task) => this.cancelJobs(task);
    this.store = store ? store(onEvict) : new TaskStore(settings.maxTasks, onEvict);
  }

  async create(
    spec: TaskSpec,
    owner: string,
    baseUrl: string,
    outcome: Outcome,
    now: number,
  ): Promise<CreatedTask> {
    // The check comes first, so that a refused task takes no id; a shared store checks again
    // as it adds (two replicas at once: one of them is refused then).
    if (spec.externalId && (await this.store.hasExternal(owner, spec.externalId))) {
      throw fieldError(['external_task_id'], 'is already used by another task of this key');
    }
    const id = this.ids.next('task');
    const task: Task = {
      id,
      owner,
      kind: spec.kind,
      externalId: spec.externalId,
      duration: spec.duration,
      callbackUrl: spec.callbackUrl,
      baseUrl: this.intern(baseUrl),
      createdAt: now,
      queueMs: this.settings.queueMs,
      renderMs: this.settings.renderMs,
      outcome,
    };
    if (!(await this.store.create(task, now))) {
      throw fieldError(['external_task_id'], 'is already used by another task of this key');
    }
    if (task.callbackUrl && this.courier) await this.courier.track(task);
    else if (task.callbackUrl) {
      const steps = transitions(task);
      const cancels = steps.map(([at, status], i) =>
        this.scheduler.at(at, () => {
          if (i === steps.length - 1) this.pendingJobs.delete(task.id);
          // A status forced before this moment replaces the rest of the timeline.
          if (!task.forced || task.forced.at > at) void this.notifyIf(task, at, status);
        }),
      );
      this.pendingJobs.set(task.id, cancels);
    }
    return createdTask(task, now);
  }

  /** A task of this owner and kind, by task_id or external_task_id, as it is at `now`. */
  async find(owner: string, kind: VideoKind, id: string, now: number) {
    const task = await this.store.find(owner, kind, id);
    return task && taskRecord(task, now, this.tokenOf);
  }

  /** One page of this owner's tasks of a kind, newest first. */
  async list(owner: string, kind: VideoKind, pageNum: number, pageSize: number, now: number) {
    const tasks = await this.store.list(owner, kind, pageNum, pageSize);
    return tasks.map((task) => taskRecord(task, now, this.tokenOf));
  }

  /**
   * Sets a task's status from `now` on (control surface); the change is notified like any
   * other. A failure without a message gets the content-safety one. With a session, a task of
   * another session is not found.
   */
  async force(
    taskId: string,
    status: TaskStatus,
    message: string | undefined,
    now: number,
    session?: string,
  ): Promise<TaskRecord | undefined> {
    const held = await this.store.get(taskId);
    if (!held || (session !== undefined && sessionOfOwner(held.owner) !== session)) {
      return undefined;
    }
    const text = message ?? (status === 'failed' ? CONTENT_SAFETY_MESSAGE : '');
    const forced = { status, message: text, at: now };
    const was = await this.store.force(taskId, forced);
    if (!was) return undefined;
    const task = { ...was, forced };
    if (status !== statusAt(was, now).status) {
      if (this.courier) {
        if (task.callbackUrl) await this.courier.forced(task, status, text, now);
      } else await this.notifyIf(task, now, status);
    }
    return taskRecord(task, now, this.tokenOf);
  }

  /**
   * Whether a result video exists at `now` under this token: its task is held, has succeeded,
   * and the token is the task's own (compared in constant time).
   */
  async hasResult(token: string, videoId: string, now: number): Promise<boolean> {
    const taskId = taskIdOfVideo(videoId);
    const task = taskId === undefined ? undefined : await this.store.get(taskId);
    if (task === undefined) return false;
    const own = this.tokenOf(task);
    if (token.length !== own.length || !timingSafeEqual(Buffer.from(token), Buffer.from(own))) {
      return false;
    }
    return statusAt(task, now).status === 'succeed';
  }

  reset(): void | Promise<void> {
    for (const id of [...this.pendingJobs.keys()]) this.cancelJobs(id);
    this.baseUrls.clear();
    return this.store.clear();
  }

  /** Forgets one session's tasks, and their callbacks still due. */
  async resetSession(session: string): Promise<void> {
    for (const task of await this.store.removeSession(session)) this.cancelJobs(task);
  }

  /** A task's callback body at `at`: its record then, as JSON. */
  callbackBody(task: Task, at: number): string {
    return JSON.stringify(taskRecord(task, at, this.tokenOf));
  }

  /** A task as held (for the shared couriers). */
  async held(id: string): Promise<Task | undefined> {
    return this.store.get(id);
  }

  /** How many tasks are in each status at `now`. */
  countByStatus(now: number): Map<string, number> | Promise<Map<string, number>> {
    return this.store.countByStatus(now);
  }

  /** How many tasks are in each status at `now`: all of them, or one session's. */
  async statusCounts(now: number, session?: string): Promise<Record<TaskStatus, number>> {
    const counts: Record<TaskStatus, number> = {
      submitted: 0,
      processing: 0,
      succeed: 0,
      failed: 0,
    };
    if (session === undefined) {
      for (const [status, n] of await this.store.countByStatus(now)) {
        if (status in counts) counts[status as TaskStatus] += n;
      }
      return counts;
    }
    const { tasks } = await this.store.newest(Number.POSITIVE_INFINITY, session);
    for (const task of tasks) counts[statusAt(task, now).status]++;
    return counts;
  }

  /**
   * The tasks held (of one session, when given), oldest first, as they are at `now` (the
   * control surface): the newest `limit` of them, and how many there are.
   */
  async all(
    now: number,
    limit = Number.POSITIVE_INFINITY,
    session?: string,
  ): Promise<{
    size: number;
    tasks: Array<
      TaskRecord & { kind: VideoKind; session: string; key_hash: string | null; progress: number }
    >;
  }> {
    const { size, tasks: shown } = await this.store.newest(limit, session);
    return {
      size,
      tasks: shown.map((task) => ({
        ...taskRecord(task, now, this.tokenOf),
        kind: task.kind,
        session: sessionOfOwner(task.owner),
        key_hash: shownKeyHash(keyOfOwner(task.owner)),
        progress: progressOf(task, now),
      })),
    };
  }

  private cancelJobs(task: Task | string): void {
    const id = typeof task === 'string' ? task : task.id;
    for (const cancel of this.pendingJobs.get(id) ?? []) cancel();
    this.pendingJobs.delete(id);
  }

  /**
   * Notifies a transition if the task still exists (as it is now in the store: a status forced
   * since counts) and is still in that status at that time.
   */
  private notifyIf(created: Task, at: number, status: TaskStatus): void | Promise<void> {
    if (!created.callbackUrl) return;
    const held = this.store.get(created.id);
    if (held instanceof Promise)
      return held.then((task) => this.notifyHeld(task, created, at, status));
    this.notifyHeld(held, created, at, status);
  }

  private notifyHeld(task: Task | undefined, created: Task, at: number, status: TaskStatus): void {
    if (!task?.callbackUrl || task.createdAt !== created.createdAt) return;
    if (statusAt(task, at).status !== status) return;
    const body = JSON.stringify(taskRecord(task, at, this.tokenOf));
    this.callbacks.enqueue(task.id, task.owner, task.callbackUrl, status, body);
  }

  /** Many tasks share one origin; keep one copy of the string. */
  private intern(baseUrl: string): string {
    const known = this.baseUrls.get(baseUrl);
    if (known !== undefined) return known;
    if (this.baseUrls.size >= 100) this.baseUrls.clear();
    this.baseUrls.set(baseUrl, baseUrl);
    return baseUrl;
  }
}
