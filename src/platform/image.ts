/** Reads the format and size of a JPEG, PNG, GIF or WebP from its bytes, without decoding pixels. */

export interface ImageInfo {
  format: 'jpeg' | 'png' | 'gif' | 'webp';
  width: number;
  height: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function png(bytes: Buffer): ImageInfo | undefined {
  if (bytes.length < 24 || !PNG_SIGNATURE.every((b, i) => bytes[i] === b)) return undefined;
  if (bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { format: 'png', width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** Start-of-frame markers carry the size; C4, C8 and CC share the range but are not frames. */
const isStartOfFrame = (m: number) =>
  m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function jpeg(bytes: Buffer): ImageInfo | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 4 <= bytes.length) {
    if (bytes[i] !== 0xff) return undefined;
    const marker = bytes[i + 1] as number;
    if (marker === 0xff) {
      i++;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined;
    const length = bytes.readUInt16BE(i + 2);
    if (isStartOfFrame(marker)) {
      if (i + 9 > bytes.length) return undefined;
      return {
        format: 'jpeg',
        height: bytes.readUInt16BE(i + 5),
        width: bytes.readUInt16BE(i + 7),
      };
    }
    i += 2 + length;
  }
  return undefined;
}

function gif(bytes: Buffer): ImageInfo | undefined {
  if (bytes.length < 10) return undefined;
  const magic = bytes.toString('latin1', 0, 6);
  if (magic !== 'GIF87a' && magic !== 'GIF89a') return undefined;
  return { format: 'gif', width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
}

/** @see https://developers.google.com/speed/webp/docs/riff_container */
function webp(bytes: Buffer): ImageInfo | undefined {
  if (bytes.length < 30 || bytes.toString('latin1', 0, 4) !== 'RIFF') return undefined;
  if (bytes.toString('latin1', 8, 12) !== 'WEBP') return undefined;
  const chunk = bytes.toString('latin1', 12, 16);
  if (chunk === 'VP8X') {
    return {
      format: 'webp',
      width: bytes.readUIntLE(24, 3) + 1,
      height: bytes.readUIntLE(27, 3) + 1,
    };
  }
  if (chunk === 'VP8 ') {
    return {
      format: 'webp',
      width: bytes.readUInt16LE(26) & 0x3fff,
      height: bytes.readUInt16LE(28) & 0x3fff,
    };
  }
  if (chunk === 'VP8L' && bytes[20] === 0x2f) {
    const bits = bytes.readUInt32LE(21);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  return undefined;
}

export function inspectImage(bytes: Buffer): ImageInfo | undefined {
  return png(bytes) ?? jpeg(bytes) ?? gif(bytes) ?? webp(bytes);
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Decodes strict Base64 (no `data:` prefix, no whitespace); undefined when it is not Base64. */
export function decodeBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}
