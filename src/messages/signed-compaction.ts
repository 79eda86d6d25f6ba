import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { GatewayError, type PathSegment } from '../platform/errors.js';

/**
 * On-demand compaction's signed blocks (the `compact-2026-09-04` beta, docs/messages.md "Compaction"):
 * the block a compaction request returns carries a signature over its summary, and a later
 * request that sends it back has it verified, as upstream verifies it.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */

/** On-demand compaction's beta. */
export const ON_DEMAND = 'compact-2026-09-04';

/** The signing key (the emulator's own: upstream's signatures are opaque). */
const KEY = 'gateway-emulator compaction signature v1';
/** Bytes of the summary's digest, and of the MAC over it, in a signature. */
const PART = 16;

const digest = (content: string) => createHash('sha256').update(content).digest().subarray(0, PART);
const mac = (digested: Buffer) =>
  createHmac('sha256', KEY).update(digested).digest().subarray(0, PART);

/**
 * A signature: the summary's digest and a MAC over that digest. Two parts, so that a block
 * whose summary was edited (a signature that is still the emulator's, over another text) is
 * told from one whose signature was (upstream's two error codes).
 */
export function signCompaction(content: string): string {
  const digested = digest(content);
  return Buffer.concat([digested, mac(digested)]).toString('base64');
}

/** A refusal with upstream's code in `error.details.error_code` (as the SDKs read it). */
export function compactionError(code: string, message: string, path?: PathSegment[]) {
  return new GatewayError(400, message, {
    ...(path ? { issue: { path, kind: 'value' as const, problem: message } } : {}),
    extra: { details: { error_code: code } },
  });
}

/**
 * Checks a signed block sent back (`at`: its path): `compaction_signature_invalid` for a
 * signature the emulator did not make, `compaction_content_mismatch` for a summary other than
 * the one it signed.
 */
export function verifyCompaction(
  content: string | null | undefined,
  signature: string,
  at: PathSegment[],
): void {
  const bytes = Buffer.from(signature, 'base64');
  const signed = bytes.subarray(0, PART);
  if (
    bytes.length !== 2 * PART ||
    bytes.toString('base64') !== signature ||
    !timingSafeEqual(mac(signed), bytes.subarray(PART))
  ) {
    throw compactionError(
      'compaction_signature_invalid',
      'Invalid `signature` in `compaction` block',
      [...at, 'signature'],
    );
  }
  if (typeof content !== 'string' || !digest(content).equals(signed)) {
    throw compactionError(
      'compaction_content_mismatch',
      '`content` differs from the summary its `signature` was made for; send the block back as it was returned',
      [...at, 'content'],
    );
  }
}
