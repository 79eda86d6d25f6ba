import type { Clock, SetTimer } from './clock.js';
import type { Feature } from './features.js';

interface Job {
  at: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
}

const noop = () => {};

const byTime = (a: Job, b: Job) => a.at - b.at || a.seq - b.seq;

/**
 * Runs jobs at emulator times. One wall-clock timer is armed for the earliest job, and every
 * clock change runs whatever became due, so advancing the clock fires work at once.
 */
export class Scheduler implements Feature {
  readonly name = 'scheduler';
  private heap: Job[] = [];
  private seq = 0;
  /** Cancelled jobs still in the heap; past half of it they are swept out. */
  private dead = 0;
  private cancelTimer: (() => void) | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly clock: Clock,
    private readonly setTimer: SetTimer,
  ) {
    this.unsubscribe = clock.onChange(() => this.runDue());
  }

  /** Jobs waiting to run. */
  get size(): number {
    return this.heap.length - this.dead;
  }

  /** Runs `run` once the clock reaches `time`; returns a function that cancels it. */
  at(time: number, run: () => void): () => void {
    const job: Job = { at: time, seq: this.seq++, run, cancelled: false };
    this.push(job);
    if (this.heap[0] === job) this.arm();
    return () => {
      if (job.cancelled) return;
      job.cancelled = true;
      // The job stays in the heap until it is swept or due; what it would run must not.
      job.run = noop;
      this.dead++;
      if (this.dead > 256 && this.dead * 2 > this.heap.length) this.sweep();
    };
  }

  runDue(): void {
    const now = this.clock.now();
    for (let top = this.heap[0]; top && top.at <= now; top = this.heap[0]) {
      this.pop();
      if (top.cancelled) this.dead--;
      else {
        top.cancelled = true;
        top.run();
      }
    }
    this.arm();
  }

  /** Drops every job (owners cancel their own on reset; this is for close). */
  private clear(): void {
    this.heap = [];
    this.dead = 0;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  close(): void {
    this.clear();
    this.unsubscribe();
  }

  /** Drops cancelled jobs; a sorted array is a valid heap. */
  private sweep(): void {
    this.heap = this.heap.filter((job) => !job.cancelled).sort(byTime);
    this.dead = 0;
  }

  private arm(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    const top = this.heap[0];
    if (!top) return;
    const wait = Math.min(Math.max(top.at - this.clock.now(), 0), 2 ** 31 - 1);
    this.cancelTimer = this.setTimer(() => {
      this.cancelTimer = undefined;
      this.runDue();
    }, wait);
  }

  private before(a: Job, b: Job): boolean {
    return byTime(a, b) < 0;
  }

  private push(job: Job): void {
    const h = this.heap;
    h.push(job);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(h[i] as Job, h[parent] as Job)) break;
      [h[i], h[parent]] = [h[parent] as Job, h[i] as Job];
      i = parent;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop() as Job;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.before(h[l] as Job, h[m] as Job)) m = l;
      if (r < h.length && this.before(h[r] as Job, h[m] as Job)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m] as Job, h[i] as Job];
      i = m;
    }
  }
}
