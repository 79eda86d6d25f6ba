import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { imageTokens, UNSEEN_IMAGE_TOKENS } from '../../src/messages/prompt/index.js';
import { countTokens } from '../../src/platform/tokens.js';
import { PDF_PAGE_TOKENS } from '../../src/text/media.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { DOCS } from '../helpers/docs.js';
import { IMAGES } from '../helpers/images.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const image = (data: string, media_type = 'image/png') => ({
  type: 'image',
  source: { type: 'base64', media_type, data },
});
/** An image that asks for an error, not scaling, when it is over the size limit. */
const oversized = (data: string) => ({
  ...image(data),
  transformations: { oversized_image: 'error' },
});
const count = async (content: unknown[]) => {
  const res = await t.messages(
    { model: 'm', messages: [{ role: 'user', content }] },
    { path: '/count_tokens' },
  );
  expect(res.statusCode).toBe(200);
  return res.json().input_tokens as number;
};
/** The tokens of a user message holding `blocks` and the text "x". */
const withText = async (...blocks: unknown[]) =>
  (await count([...blocks, { type: 'text', text: 'x' }])) -
  (await count([{ type: 'text', text: 'x' }]));

/** A PNG of the given size: a real header, as much padding as asked for. */
function png(width: number, height: number, padding = 0): string {
  const bytes = Buffer.from(IMAGES.png320, 'base64');
  const head = Buffer.from(bytes);
  head.writeUInt32BE(width, 16);
  head.writeUInt32BE(height, 20);
  return Buffer.concat([head, Buffer.alloc(padding)]).toString('base64');
}

describe('images', () => {
  it('cost width × height / 750 after scaling, for every accepted format', async () => {
    expect(await withText(image(IMAGES.png320))).toBe(Math.ceil((320 * 320) / 750));
    expect(await withText(image(IMAGES.jpeg640x360, 'image/jpeg'))).toBe(
      Math.ceil((640 * 360) / 750),
    );
    expect(await withText(image(IMAGES.gif, 'image/gif'))).toBe(Math.ceil((320 * 320) / 750));
    expect(await withText(image(IMAGES.webpLossy, 'image/webp'))).toBe(
      Math.ceil((413 * 211) / 750),
    );
    expect(
      await withText({ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }),
    ).toBe(UNSEEN_IMAGE_TOKENS);
  });

  it("are scaled to a 1568-px long edge and 784×1568's pixels before counting", () => {
    // Sizes upstream's table keeps as they are.
    expect(imageTokens(1092, 1092)).toBe(1590);
    expect(imageTokens(784, 1568)).toBe(1640);
    expect(imageTokens(951, 1268)).toBe(Math.ceil((951 * 1268) / 750));
    // Larger ones shrink to fit.
    expect(imageTokens(3136, 1568)).toBe(imageTokens(1568, 784));
    expect(imageTokens(2000, 1000)).toBe(1640);
    expect(imageTokens(8000, 8000)).toBe(Math.ceil((1109 * 1109) / 750));
  });

  it.each([
    [
      'a media type that is not the image',
      [image(IMAGES.png320, 'image/jpeg')],
      'messages.0.content.0.image.source.base64.data: The image was specified using the image/jpeg media type, but the image appears to be a image/png image',
    ],
    [
      'an unsupported media type',
      [image(IMAGES.png320, 'image/bmp')],
      'messages.0.content.0.source.media_type: must be one of "image/jpeg", "image/png", "image/gif", "image/webp"',
    ],
    [
      'data that is not Base64',
      [image('not base64!')],
      'messages.0.content.0.image.source.base64.data: Invalid base64 data',
    ],
    [
      'bytes that are no image',
      [image(Buffer.from('hello world!').toString('base64'))],
      'messages.0.content.0.image.source.base64.data: The image data could not be read as an image',
    ],
    [
      'an image over 5 MB',
      [image(png(320, 320, 5 * 1024 * 1024))],
      `messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: ${Buffer.from(IMAGES.png320, 'base64').length + 5 * 1024 * 1024} bytes > 5242880 bytes`,
    ],
    [
      'more than 100 images',
      Array.from({ length: 101 }, () => image(IMAGES.png320)),
      'messages: Too many images: 101 > 100',
    ],
    ['an image in a system prompt', undefined, 'system.0.text: Field required'],
  ])('refuses %s', async (label, content, message) => {
    const body =
      content === undefined
        ? {
            model: 'm',
            max_tokens: 10,
            system: [image(IMAGES.png320)],
            messages: [{ role: 'user', content: 'x' }],
          }
        : { model: 'm', max_tokens: 10, messages: [{ role: 'user', content }] };
    const res = await t.messages(body);
    expect(res.statusCode, label).toBe(400);
    expect(res.json().error).toEqual({ type: 'invalid_request_error', message });
  });

  it.each([
    [
      'a side over 8000 px',
      [oversized(png(8001, 100))],
      8000,
      'messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels',
      ['messages.0.content.0'],
    ],
    [
      'a side over 2000 px among more than 20 images',
      [
        ...Array.from({ length: 20 }, () => image(IMAGES.png320)),
        oversized(png(2001, 100)),
        oversized(png(100, 2500)),
        // (one that asks to be scaled is not named)
        { ...image(png(3000, 100)), transformations: { oversized_image: 'downsize' } },
      ],
      2000,
      'messages.0.content.20.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels',
      ['messages.0.content.20', 'messages.0.content.21'],
    ],
  ])(
    'refuses %s when asked to (oversized_image: "error"), naming every such image',
    async (label, content, max, message, paths) => {
      const res = await t.messages({
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content }],
      });
      expect(res.statusCode, label).toBe(400);
      expect(res.json().error).toEqual({
        type: 'invalid_request_error',
        message,
        details: { error_code: 'image_dimensions_too_large', max_side_length_pixels: max, paths },
      });
    },
  );

  it('scales an image over the size limit down by default (oversized_image: "downsize"), counted as scaled', async () => {
    for (const transformations of [undefined, null, {}, { oversized_image: 'downsize' }]) {
      const big = {
        ...image(png(8001, 100)),
        ...(transformations === undefined ? {} : { transformations }),
      };
      expect(await withText(big)).toBe(imageTokens(8001, 100));
    }
  });

  it('are read inside tool results', async () => {
    const res = await t.messages({
      model: 'm',
      max_tokens: 100,
      tools: [{ name: 'screenshot', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [image(IMAGES.webpLossless, 'image/webp')],
            },
          ],
        },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().content[0].text).toMatch(/^The screenshot tool returned: \[image\]\./);
  });
});

describe('documents', () => {
  const pdf = (data: string, extra: object = {}) => ({
    type: 'document',
    source: { type: 'base64', media_type: 'application/pdf', data },
    ...extra,
  });

  it('cost 2,000 tokens a PDF page, plus title and context; text documents cost their text', async () => {
    expect(await withText(pdf(DOCS.twoPages))).toBe(2 * PDF_PAGE_TOKENS);
    expect(
      await withText(
        pdf(DOCS.twoPages, {
          title: 'Fox report',
          context: 'internal',
          citations: { enabled: true },
        }),
      ),
    ).toBe(2 * PDF_PAGE_TOKENS + countTokens('Fox report\ninternal'));
    const text = 'The quick brown fox jumps over the lazy dog.';
    expect(
      await withText({
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: text },
      }),
    ).toBe(countTokens(`\n${text}`));
    expect(
      await withText({
        type: 'document',
        source: { type: 'url', url: 'https://example.com/a.pdf' },
      }),
    ).toBe(PDF_PAGE_TOKENS);
    expect(
      await withText({
        type: 'document',
        source: { type: 'content', content: [{ type: 'text', text: 'one' }, image(IMAGES.png320)] },
      }),
    ).toBe(countTokens('one') + Math.ceil((320 * 320) / 750));
  });

  it.each([
    [
      'a PDF that is not one',
      pdf(Buffer.from('plain text').toString('base64')),
      'messages.0.content.0.document.source.base64.data: The PDF specified was not valid.',
    ],
    [
      'more than 100 pages',
      pdf(DOCS.tooManyPages),
      'messages.0.content.0.document.source.base64.data: A maximum of 100 PDF pages may be provided.',
    ],
    [
      'a media type other than PDF',
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/msword', data: 'AAAA' },
      },
      'messages.0.content.0.source.media_type: must be "application/pdf"',
    ],
  ])('refuses %s', async (_label, block, message) => {
    const res = await t.messages({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: [block] }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toBe(message);
  });
});

describe('prompt cache with tools, media and automatic breakpoints', () => {
  const words = (n: number) => 'abcd '.repeat(n);
  const tools = [
    { name: 'search', description: words(1200), input_schema: { type: 'object' } },
    {
      name: 'fetch',
      description: 'Fetch a page',
      input_schema: { type: 'object' },
      cache_control: { type: 'ephemeral' },
    },
  ];
  const usage = async (body: object) =>
    (await t.messages({ model: 'm', max_tokens: 20, ...body })).json().usage;

  it('puts tools first in the prefix: a breakpoint on the last tool caches every tool', async () => {
    const body = { tools, messages: [{ role: 'user', content: 'hello' }] };
    const toolTokens =
      countTokens(
        JSON.stringify({
          name: 'search',
          description: words(1200),
          input_schema: { type: 'object' },
        }),
      ) +
      countTokens(
        JSON.stringify({
          name: 'fetch',
          description: 'Fetch a page',
          input_schema: { type: 'object' },
        }),
      );
    const first = await usage(body);
    expect(first.cache_creation_input_tokens).toBe(toolTokens);
    const second = await usage(body);
    expect(second.cache_read_input_tokens).toBe(toolTokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    // A change in the messages keeps the tools' entry.
    expect(
      (await usage({ tools, messages: [{ role: 'user', content: 'other' }] }))
        .cache_read_input_tokens,
    ).toBe(toolTokens);
  });

  it('caches an image block like text, and a top-level cache_control marks the last block', async () => {
    const messages = [
      {
        role: 'user',
        content: [{ type: 'text', text: words(1100) }, image(IMAGES.jpeg640x360, 'image/jpeg')],
      },
    ];
    const body = { cache_control: { type: 'ephemeral' }, messages };
    const total = 3 + 1100 + Math.ceil((640 * 360) / 750);
    expect(await usage(body)).toMatchObject({
      cache_creation_input_tokens: total,
      input_tokens: 0,
    });
    expect(await usage(body)).toMatchObject({
      cache_read_input_tokens: total,
      cache_creation_input_tokens: 0,
    });
    // Another image is another prefix.
    const other = [
      { role: 'user', content: [{ type: 'text', text: words(1100) }, image(IMAGES.png320)] },
    ];
    expect(await usage({ cache_control: { type: 'ephemeral' }, messages: other })).toMatchObject({
      cache_read_input_tokens: 0,
    });
  });

  it('counts breakpoints on tools against the limit of 4', async () => {
    const marked = Array.from({ length: 5 }, (_, i) => ({
      name: `t${i}`,
      input_schema: { type: 'object' },
      cache_control: { type: 'ephemeral' },
    }));
    const res = await t.messages({
      model: 'm',
      max_tokens: 5,
      tools: marked,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.json().error.message).toBe(
      'tools.4.cache_control: A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
  });
});
