import { describe, expect, it } from 'vitest';
import { decodeBase64, inspectImage } from '../../src/platform/image.js';
import { IMAGES } from '../helpers/images.js';

const bytes = (b64: string) => Buffer.from(b64, 'base64');

describe('inspectImage', () => {
  it('reads PNG and JPEG sizes from real files', () => {
    expect(inspectImage(bytes(IMAGES.png320))).toEqual({ format: 'png', width: 320, height: 320 });
    expect(inspectImage(bytes(IMAGES.jpeg640x360))).toEqual({
      format: 'jpeg',
      width: 640,
      height: 360,
    });
    expect(inspectImage(bytes(IMAGES.jpegTooWide))).toEqual({
      format: 'jpeg',
      width: 1000,
      height: 300,
    });
  });

  it('reads GIF and WebP (lossy, lossless, extended) sizes from real files', () => {
    expect(inspectImage(bytes(IMAGES.gif))).toEqual({ format: 'gif', width: 320, height: 320 });
    expect(inspectImage(bytes(IMAGES.webpLossy))).toEqual({
      format: 'webp',
      width: 413,
      height: 211,
    });
    expect(inspectImage(bytes(IMAGES.webpLossless))).toEqual({
      format: 'webp',
      width: 77,
      height: 55,
    });
    expect(inspectImage(bytes(IMAGES.webpAlpha))).toEqual({
      format: 'webp',
      width: 501,
      height: 33,
    });
  });

  it('rejects garbage', () => {
    expect(inspectImage(Buffer.from('hello world, not an image'))).toBeUndefined();
    expect(inspectImage(Buffer.from([0xff, 0xd8, 0xff]))).toBeUndefined();
    expect(inspectImage(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('decodeBase64', () => {
  it('decodes strict Base64 only', () => {
    expect(decodeBase64('aGk=')).toEqual(Buffer.from('hi'));
    expect(decodeBase64('aGk')).toBeUndefined();
    expect(decodeBase64('aG k=')).toBeUndefined();
    expect(decodeBase64('data:image/png;base64,aGk=')).toBeUndefined();
  });
});
