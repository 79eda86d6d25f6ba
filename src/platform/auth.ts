import { createHmac } from 'node:crypto';

/**
 * Decides which API keys are accepted and maps each key to an opaque owner id, so stores
 * never hold the key itself.
 */
export class Keyring {
  private readonly allowed: Set<string> | undefined;
  private readonly owners = new Map<string, string>();

  constructor(
    keys: readonly string[] | undefined,
    /** Keys the fingerprints: a fingerprint cannot be checked against a guessed key. */
    private readonly secret: () => Buffer,
  ) {
    this.allowed = keys ? new Set(keys) : undefined;
  }

  get open(): boolean {
    return this.allowed === undefined;
  }

  accepts(key: string): boolean {
    return key.length > 0 && (this.allowed === undefined || this.allowed.has(key));
  }

  /** The key's fingerprint, by which stores, rules and the journal know it. */
  ownerOf(key: string): string {
    let owner = this.owners.get(key);
    if (owner === undefined) {
      owner = createHmac('sha256', this.secret()).update(key).digest('base64url').slice(0, 22);
      if (this.owners.size >= 10_000) this.owners.clear();
      this.owners.set(key, owner);
    }
    return owner;
  }
}
