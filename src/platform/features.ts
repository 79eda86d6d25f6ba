/**
 * A part of the emulator's memory or machinery. Each one knows how to empty and stop itself;
 * `/_emulator/reset` and `app.close()` walk the registry, so a new store cannot be forgotten.
 */
export interface Feature {
  /** The name a reset knows it by (`tasks`, `cache`, `journal`, ...). */
  readonly name: string;
  reset?(): void;
  /** Forgets what one session made (a feature without sessions keeps everything). */
  resetSession?(session: string): void;
  close?(): void;
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
  reset(only?: readonly string[], session?: string): void {
    for (const feature of this.all) {
      if (only && !only.includes(feature.name)) continue;
      if (session === undefined) feature.reset?.();
      else feature.resetSession?.(session);
    }
  }

  close(): void {
    for (const feature of this.all) feature.close?.();
  }
}
