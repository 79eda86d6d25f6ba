import type { Config } from '../config.js';
import type { Deps } from '../platform/clock.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Callbacks } from './callbacks.js';
import type { TaskSpec } from './rules.js';
import type { TaskStatus } from './schemas.js';
import { type Outcome, statusAt, type Task, TaskStore, taskRecord, transitions } from './tasks.js';

/**
 * Creates tasks on the emulator clock and wires their callbacks: each automatic status change
 * of a task with a `callback_url` is a scheduler job that notifies it.
 */
export class VideoService {
  readonly store: TaskStore;
  private readonly baseUrls = new Map<string, string>();
  /** Cancels the callback jobs still due for a task, so evicted tasks leave nothing behind. */
  private readonly pendingJobs = new Map<Task, Array<() => void>>();

  constructor(
    private readonly config: Config,
    private readonly deps: Deps,
    private readonly scheduler: Scheduler,
    private readonly callbacks: Callbacks,
  ) {
    this.store = new TaskStore(config.maxTasks, (task) => {
      for (const cancel of this.pendingJobs.get(task) ?? []) cancel();
      this.pendingJobs.delete(task);
    });
  }

  create(spec: TaskSpec, owner: string, baseUrl: string, outcome: Outcome): Task {
    const now = this.deps.clock.now();
    const task: Task = {
      id: this.deps.ids.next('task'),
      owner,
      kind: spec.kind,
      externalId: spec.externalId,
      duration: spec.duration,
      callbackUrl: spec.callbackUrl,
      baseUrl: this.intern(baseUrl),
      createdAt: now,
      queueMs: this.config.videoQueueMs,
      renderMs: this.config.videoRenderMs,
      outcome,
    };
    this.store.add(task, now);
    if (task.callbackUrl) {
      const steps = transitions(task);
      const cancels = steps.map(([at, status], i) =>
        this.scheduler.at(at, () => {
          if (i === steps.length - 1) this.pendingJobs.delete(task);
          // A status forced before this moment replaces the rest of the timeline.
          if (!task.forced || task.forced.at > at) this.notifyIf(task, at, status);
        }),
      );
      this.pendingJobs.set(task, cancels);
    }
    return task;
  }

  /** Sets a task's status from now on (control surface); the change is notified like any other. */
  force(task: Task, status: TaskStatus, message: string): void {
    const now = this.deps.clock.now();
    const before = statusAt(task, now).status;
    task.forced = { status, message, at: now };
    if (status !== before) this.notifyIf(task, now, status);
  }

  /** Notifies a transition if the task still exists and is still in that status at that time. */
  private notifyIf(task: Task, at: number, status: TaskStatus): void {
    if (!task.callbackUrl || this.store.get(task.id) !== task) return;
    if (statusAt(task, at).status !== status) return;
    this.callbacks.enqueue(task.id, task.callbackUrl, status, JSON.stringify(taskRecord(task, at)));
  }

  /** Many tasks share one origin; keep one copy of the string. */
  private intern(baseUrl: string): string {
    const known = this.baseUrls.get(baseUrl);
    if (known !== undefined) return known;
    if (this.baseUrls.size >= 100) this.baseUrls.clear();
    this.baseUrls.set(baseUrl, baseUrl);
    return baseUrl;
  }

  clear(): void {
    this.store.clear();
    this.baseUrls.clear();
    this.pendingJobs.clear();
  }
}
