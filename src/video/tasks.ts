import { createHmac } from 'node:crypto';
import { sessionOfOwner } from '../harness/session.js';
import type { Maybe } from '../platform/maybe.js';
import type { VideoKind } from './models.js';
import type { CreatedTask, TaskRecord, TaskStatus } from './schemas.js';

/**
 * Video tasks. A task stores only its timeline; its status at any moment is derived from the
 * timeline and the emulator clock (`statusAt`), so nothing has to run for it to progress.
 */

export type Outcome = 'succeed' | 'failed';

export const CONTENT_SAFETY_MESSAGE =
  'Failure to pass the risk control system: the content may violate the usage policy';

export interface Task {
  id: string;
  owner: string;
  kind: VideoKind;
  externalId: string;
  duration: string;
  callbackUrl: string | undefined;
  /** Base of the result URL: PUBLIC_BASE_URL or the creating request's origin. */
  baseUrl: string;
  /** The unguessable part of the result URL (`mediaToken`), made the first time it is shown. */
  token?: string;
  createdAt: number;
  queueMs: number;
  renderMs: number;
  outcome: Outcome;
  /** A status set through the control surface, final from `at` on. */
  forced?: { status: TaskStatus; message: string; at: number };
}

export interface StatusView {
  status: TaskStatus;
  /** When the task entered that status. */
  since: number;
  message: string;
}

const TERMINAL = new Set<TaskStatus>(['succeed', 'failed']);
export const isTerminal = (status: TaskStatus) => TERMINAL.has(status);

/** The task's status at `now`: submitted → processing → outcome, unless forced. */
export function statusAt(task: Task, now: number): StatusView {
  if (task.forced && now >= task.forced.at) {
    return { status: task.forced.status, since: task.forced.at, message: task.forced.message };
  }
  const processingAt = task.createdAt + task.queueMs;
  const doneAt = processingAt + task.renderMs;
  if (now < processingAt) return { status: 'submitted', since: task.createdAt, message: '' };
  if (now < doneAt) return { status: 'processing', since: processingAt, message: '' };
  const failed = task.outcome === 'failed';
  return { status: task.outcome, since: doneAt, message: failed ? CONTENT_SAFETY_MESSAGE : '' };
}

/** The automatic transitions after creation, in order: `[time, status]`. */
export function transitions(task: Task): Array<[number, TaskStatus]> {
  const processingAt = task.createdAt + task.queueMs;
  return [
    [processingAt, 'processing'],
    [processingAt + task.renderMs, task.outcome],
  ];
}

export const videoIdOf = (task: Task) => `v${task.id}`;
export const taskIdOfVideo = (videoId: string) =>
  videoId.startsWith('v') ? videoId.slice(1) : undefined;
export const videoUrl = (task: Task, token: string) =>
  `${task.baseUrl}/media/videos/${token}/${videoIdOf(task)}.mp4`;

/**
 * The token in a task's result URL: 128 bits of an HMAC of the task id under the process
 * secret, so that a result URL (public, like a CDN link) cannot be guessed from a task id.
 */
export const mediaToken = (secret: Buffer, taskId: string) =>
  createHmac('sha256', secret).update(taskId).digest('base64url').slice(0, 22);

/**
 * The task record as it is at `now`; `tokenOf` gives the token of its result URL, asked only
 * once the task has succeeded.
 * @see https://kling.ai/document-api/apiReference/model/textToVideo
 */
export function taskRecord(task: Task, now: number, tokenOf: (task: Task) => string): TaskRecord {
  const view = statusAt(task, now);
  return {
    task_id: task.id,
    task_status: view.status,
    task_status_msg: view.message,
    task_info: { external_task_id: task.externalId },
    task_result: {
      videos:
        view.status === 'succeed'
          ? [{ id: videoIdOf(task), url: videoUrl(task, tokenOf(task)), duration: task.duration }]
          : [],
    },
    created_at: task.createdAt,
    updated_at: view.since,
  };
}

export function createdTask(task: Task, now: number): CreatedTask {
  const view = statusAt(task, now);
  return {
    task_id: task.id,
    task_status: view.status,
    task_info: { external_task_id: task.externalId },
    created_at: task.createdAt,
    updated_at: view.since,
  };
}

/**
 * How far eviction looks for a finished task before it takes the oldest one regardless. Tasks
 * share one timeline length, so they finish in creation order: only a forced status can put a
 * finished task behind an unfinished one, and a short look covers that.
 */
const EVICTION_SCAN = 32;

/** Where tasks are held: in memory (`TaskStore`), or in the shared store (state/tasks.ts). */
export interface Tasks {
  /** Whether an owner's external id is taken (a check before a task takes an id). */
  hasExternal(owner: string, externalId: string): Maybe<boolean>;
  /** Adds a task unless its external id is taken for its owner (false then); evicts past the bound. */
  create(task: Task, now: number): Maybe<boolean>;
  get(id: string): Maybe<Task | undefined>;
  find(owner: string, kind: VideoKind, id: string): Maybe<Task | undefined>;
  list(owner: string, kind: VideoKind, pageNum: number, pageSize: number): Maybe<Task[]>;
  /** Sets a task's forced status; the task as it was before, or undefined when it is not held. */
  force(id: string, forced: NonNullable<Task['forced']>): Maybe<Task | undefined>;
  /** Removes one session's tasks and returns them. */
  removeSession(session: string): Maybe<Task[]>;
  clear(): Maybe<void>;
  /** The newest `limit` tasks (of a session), oldest first, and how many there are. */
  newest(limit: number, session?: string): Maybe<{ size: number; tasks: Task[] }>;
  countByStatus(now: number): Maybe<Map<string, number>>;
}

/**
 * The in-memory store: every task by id, an index of external ids, and the creation order
 * (for eviction and listings). Holds at most `maxTasks`; past that the oldest finished task
 * goes first.
 */
export class TaskStore implements Tasks {
  private readonly tasks = new Map<string, Task>();
  private readonly byExternal = new Map<string, Task>();
  /** Creation order; removed tasks are skipped lazily (a Map iterated from its head after many
   * deletions walks their tombstones, which made eviction O(n)). */
  private order: Task[] = [];
  private head = 0;

  constructor(
    private readonly maxTasks: number,
    /** Told about each task eviction removes. */
    private readonly onEvict: (task: Task) => void = () => {},
  ) {}

  get size(): number {
    return this.tasks.size;
  }

  hasExternal(owner: string, externalId: string): boolean {
    return this.byExternal.has(`${owner}\n${externalId}`);
  }

  create(task: Task, now: number): boolean {
    if (task.externalId && this.hasExternal(task.owner, task.externalId)) return false;
    this.add(task, now);
    return true;
  }

  force(id: string, forced: NonNullable<Task['forced']>): Task | undefined {
    const task = this.tasks.get(id);
    if (!task) return undefined;
    const before = { ...task };
    task.forced = forced;
    return before;
  }

  removeSession(session: string): Task[] {
    return this.removeWhere((t) => sessionOfOwner(t.owner) === session);
  }

  newest(limit: number, session?: string): { size: number; tasks: Task[] } {
    const held = this.all().filter(
      (t) => session === undefined || sessionOfOwner(t.owner) === session,
    );
    return {
      size: held.length,
      tasks: held.length > limit ? held.slice(held.length - limit) : held,
    };
  }

  countByStatus(now: number): Map<string, number> {
    const counts = new Map<string, number>();
    for (const task of this.all()) {
      const status = statusAt(task, now).status;
      counts.set(status, (counts.get(status) ?? 0) + 1);
    }
    return counts;
  }

  add(task: Task, now: number): void {
    this.tasks.set(task.id, task);
    this.order.push(task);
    if (task.externalId) this.byExternal.set(`${task.owner}\n${task.externalId}`, task);
    while (this.tasks.size > this.maxTasks) this.evictOne(now);
  }

  get(id: string): Task | undefined {
    return this.tasks.get(id);
  }

  /** A task of this owner and kind by task_id, or else by the caller's external_task_id. */
  find(owner: string, kind: VideoKind, id: string): Task | undefined {
    const mine = (task: Task | undefined) =>
      task && task.owner === owner && task.kind === kind ? task : undefined;
    return mine(this.tasks.get(id)) ?? mine(this.byExternal.get(`${owner}\n${id}`));
  }

  /** One page of this owner's tasks of a kind, newest first: a walk back from the newest. */
  list(owner: string, kind: VideoKind, pageNum: number, pageSize: number): Task[] {
    let skip = (pageNum - 1) * pageSize;
    const page: Task[] = [];
    for (let i = this.order.length - 1; i >= this.head && page.length < pageSize; i--) {
      const task = this.order[i] as Task;
      if (task.owner !== owner || task.kind !== kind || this.tasks.get(task.id) !== task) continue;
      if (skip > 0) skip--;
      else page.push(task);
    }
    return page;
  }

  /** Removes the tasks a test takes and returns them. */
  removeWhere(take: (task: Task) => boolean): Task[] {
    const removed: Task[] = [];
    for (const task of this.tasks.values()) {
      if (take(task)) removed.push(task);
    }
    for (const task of removed) this.remove(task);
    return removed;
  }

  /** Every task held, oldest first. */
  all(): Task[] {
    const out: Task[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const task = this.order[i] as Task;
      if (this.tasks.get(task.id) === task) out.push(task);
    }
    return out;
  }

  clear(): void {
    this.tasks.clear();
    this.byExternal.clear();
    this.order = [];
    this.head = 0;
  }

  private evictOne(now: number): void {
    let victim: Task | undefined;
    let scanned = 0;
    for (let i = this.head; i < this.order.length && scanned < EVICTION_SCAN; i++) {
      const task = this.order[i] as Task;
      if (this.tasks.get(task.id) !== task) continue;
      victim ??= task;
      scanned++;
      if (isTerminal(statusAt(task, now).status)) {
        victim = task;
        break;
      }
    }
    if (victim) {
      this.remove(victim);
      this.onEvict(victim);
    }
    while (this.head < this.order.length) {
      const first = this.order[this.head] as Task;
      if (this.tasks.get(first.id) === first) break;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  private remove(task: Task): void {
    this.tasks.delete(task.id);
    if (task.externalId) this.byExternal.delete(`${task.owner}\n${task.externalId}`);
  }
}
