import { GatewayError } from '../../platform/errors.js';
import {
  refusesEffort,
  refusesPrefill,
  refusesSampling,
  takesOneSampler,
  thinkingOf,
} from '../../text/models.js';
import { type MessageParam, SERVER_TOOL_RESULTS } from '../schemas.js';
import { onlyCompaction } from './compaction.js';
import type { Request } from './request.js';

/**
 * What a model takes of thinking, sampling and effort, refused in upstream's words: thinking on
 * a model without it, `adaptive` on one before it, `enabled` on one that only adapts; sampling
 * parameters other than their defaults on Opus 4.7 and later; `output_config.effort` on a model
 * before it.
 * @see https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7
 * @see https://github.com/anthropics/claude-code/issues/2245
 * @see https://github.com/askalf/dario/pull/273
 * @see https://github.com/microsoft/vscode/issues/311862
 * @see https://github.com/Oaklight/llm-rosetta/pull/289
 */
export function checkModelParams(body: Request): void {
  const type = body.thinking?.type;
  if (type === 'enabled' || type === 'adaptive' || type === 'between_tools') {
    const takes = thinkingOf(body.model);
    if (takes === 'none') {
      throw new GatewayError(400, `'${body.model}' does not support thinking.`);
    }
    if (type === 'adaptive' && takes === 'manual') {
      throw new GatewayError(400, 'adaptive thinking is not supported on this model');
    }
    if (type === 'enabled' && takes === 'adaptive') {
      throw new GatewayError(
        400,
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
      );
    }
  }
  if (refusesSampling(body.model)) {
    // "any non-default value": 1 for temperature and top_p; top_k has none
    const set = (
      [
        ['temperature', body.temperature, 1],
        ['top_p', body.top_p, 1],
        ['top_k', body.top_k, undefined],
      ] as const
    ).find(([, value, fallback]) => value !== undefined && value !== fallback);
    if (set) throw new GatewayError(400, `\`${set[0]}\` is deprecated for this model.`);
  }
  if (body.output_config?.effort != null && refusesEffort(body.model)) {
    throw new GatewayError(400, 'This model does not support the effort parameter');
  }
}

/** A turn that ends in a call to upstream's own tool or its result: a paused turn (`pause_turn`). */
export const endsInServerTool = (message: MessageParam) => {
  const last = typeof message.content === 'string' ? undefined : message.content.at(-1);
  return (
    last !== undefined &&
    (last.type === 'server_tool_use' ||
      (SERVER_TOOL_RESULTS as readonly string[]).includes(last.type))
  );
};

/** A conversation that ends in an assistant turn (a prefill), on a model that refuses one. */
export function checkPrefill(body: Request, summarizing: boolean): void {
  const final = body.messages[body.messages.length - 1];
  if (
    final?.role === 'assistant' &&
    final.content !== '' &&
    !onlyCompaction(final) &&
    // (a paused turn, sent back for the model to go on, is not a prefill)
    !endsInServerTool(final) &&
    // (nothing is sampled after a compaction request's conversation)
    !summarizing &&
    refusesPrefill(body.model)
  ) {
    throw new GatewayError(
      400,
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    );
  }
}

/** Both samplers, on a model that takes one. */
export function checkSamplers(body: Request): void {
  if (body.temperature !== undefined && body.top_p !== undefined && takesOneSampler(body.model)) {
    throw new GatewayError(
      400,
      'temperature and top_p cannot both be specified for this model. Please use only one.',
    );
  }
}
