/**
 * A part of the emulator's memory or machinery. Each one knows how to empty and stop itself;
 * `/_emulator/reset` and `app.close()` walk the registry, so a new store cannot be forgotten.
 */
export interface Feature {
  /** The name a reset knows it by (`tasks`, `cache`, `journal`, ...). */
  readonly name: string;
  /** Empties it (a shared store answers with a promise: each return is awaited if it is one). */
  reset?(): unknown;
  /** Forgets what one session made (a feature without sessions keeps everything). */
  resetSession?(session: string): unknown;
  close?(): unknown;
}

export class Features {
  private readonly all: Feature[] = [];

  /** Registers a feature and returns it, so a store is registered where it is made. */
  add<T extends Feature>(feature: T): T {
    this.all.push(feature);
    return feature;
  }

  names(): string[] {
    return this.all.map((f) => f.name);
  }

  /**
   * Resets every feature, or only those named (in registration order either way); with a
   * session, only what that session made.
   */
  reset(only?: readonly string[], session?: string): void | Promise<void> {
    let waits: Promise<unknown> | undefined;
    for (const feature of this.all) {
      if (only && !only.includes(feature.name)) continue;
      // One after another, in order (the clock goes back last, once the stores are empty).
      const run = () =>
        session === undefined ? feature.reset?.() : feature.resetSession?.(session);
      if (waits) waits = waits.then(run);
      else {
        const done = run();
        if (done instanceof Promise) waits = done;
      }
    }
    return waits?.then(() => {});
  }

  close(): void | Promise<void> {
    const waits: Promise<unknown>[] = [];
    for (const feature of this.all) {
      const done = feature.close?.();
      if (done instanceof Promise) waits.push(done);
    }
    if (waits.length > 0) return Promise.allSettled(waits).then(() => {});
  }
}
