/**
 * Reads a messages request (see read.ts): one file per block family (tools, images, documents,
 * thinking, tool pairing, web inputs, compaction, context editing; block-reader.ts keeps the
 * counts) and per rule set (model parameters, system messages, output format, cache
 * breakpoints).
 */
export { betasOf } from './betas.js';
export { type Compaction, onlyCompaction } from './compaction.js';
export {
  CLEAR_TOOL_USES_KEEP,
  CLEAR_TOOL_USES_TRIGGER,
  CLEARED_RESULT,
} from './context-editing.js';
export {
  IMAGE_MAX_BYTES,
  IMAGE_MAX_SIDE,
  imageTokens,
  MANY_IMAGES,
  MANY_IMAGES_MAX_SIDE,
  MAX_IMAGES,
  UNSEEN_IMAGE_TOKENS,
} from './images.js';
export { type MessagesPrompt, messagesPromptFacts, readPrompt } from './read.js';
export { textOf } from './request.js';
export { MAX_CONTEXT_URLS, MAX_PENDING_SEARCHES, type PendingCall } from './web-inputs.js';
