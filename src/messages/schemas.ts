/**
 * The messages API's request and response shapes, as upstream's wire has them: in schemas/, the
 * content blocks a request sends (content.ts), its tools and settings (tools.ts), the request
 * (request.ts), and the message, its blocks, usage and stream events (response.ts).
 * @see https://platform.claude.com/docs/en/api/messages
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
 * @see https://platform.claude.com/docs/en/build-with-claude/vision
 * @see https://platform.claude.com/docs/en/build-with-claude/pdf-support
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */

export * from './schemas/content.js';
export * from './schemas/request.js';
export * from './schemas/response.js';
export { CacheControlSchema, MAX_MESSAGES_TOOLS } from './schemas/shared.js';
export * from './schemas/tools.js';
