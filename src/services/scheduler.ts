import type { Clock, SetTimer } from '../deps.js';

interface Job {
  at: number;
  seq: number;
  run: () => void;
}

/**
 * Runs jobs at emulator times. One wall-clock timer is armed for the earliest job, and every
 * clock change runs whatever became due, so advancing the clock fires work at once.
 */
export class Scheduler {
  private heap: Job[] = [];
  private seq = 0;
  private cancelTimer: (() => void) | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly clock: Clock,
    private readonly setTimer: SetTimer,
  ) {
    this.unsubscribe = clock.onChange(() => this.runDue());
  }

  get size(): number {
    return this.heap.length;
  }

  at(time: number, run: () => void): void {
    this.push({ at: time, seq: this.seq++, run });
    if (this.heap[0]?.run === run) this.arm();
  }

  runDue(): void {
    const now = this.clock.now();
    for (let top = this.heap[0]; top && top.at <= now; top = this.heap[0]) {
      this.pop();
      top.run();
    }
    this.arm();
  }

  clear(): void {
    this.heap = [];
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  close(): void {
    this.clear();
    this.unsubscribe();
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
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
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
