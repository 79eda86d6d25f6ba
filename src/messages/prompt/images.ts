import { fieldError, GatewayError, type PathSegment } from '../../platform/errors.js';
import { decodeImage } from '../../text/media.js';
import type { ImageBlock } from '../schemas.js';

export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
export const IMAGE_MAX_SIDE = 8000;
/** With more than MANY_IMAGES images, each side may be at most MANY_IMAGES_MAX_SIDE. */
export const MANY_IMAGES = 20;
export const MANY_IMAGES_MAX_SIDE = 2000;
export const MAX_IMAGES = 100;
/**
 * Images are scaled to fit these before they are counted: a 1568-px long edge, and the pixels
 * of 784×1568, the largest size upstream's table keeps as it is (1092×1092 stays too).
 */
const IMAGE_LONG_EDGE = 1568;
const IMAGE_MAX_PIXELS = 784 * 1568;
/** What an image the emulator cannot see (a URL, a file id) counts: the most a scaled image costs. */
export const UNSEEN_IMAGE_TOKENS = 1600;

/** Upstream's cost of an image: scaled to fit, then width × height / 750. */
export function imageTokens(width: number, height: number): number {
  let scale = Math.min(1, IMAGE_LONG_EDGE / Math.max(width, height));
  scale = Math.min(scale, Math.sqrt(IMAGE_MAX_PIXELS / (width * height)));
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  return Math.ceil((w * h) / 750);
}

/** An image's largest side, to check once the request's image count is known. */
export interface ImageSide {
  path: PathSegment[];
  /** Where the block is, as an image error's `details.paths` names it. */
  block: string;
  side: number;
  /** `transformations.oversized_image: "error"`: refused when over the limit, not scaled. */
  refuse: boolean;
}

/** An image block's prompt text and tokens, checked as upstream does (a base64 one decoded). */
export function readImage(
  block: ImageBlock,
  path: PathSegment[],
): { text: string; tokens: number; side?: ImageSide } {
  const { source } = block;
  if (source.type !== 'base64') {
    return {
      text: `image\n${source.type === 'url' ? source.url : source.file_id}`,
      tokens: UNSEEN_IMAGE_TOKENS,
    };
  }
  const where = [...path, 'image', 'source', 'base64'];
  const image = decodeImage(source.data);
  if (image === 'not-base64') throw fieldError([...where, 'data'], 'Invalid base64 data');
  if (image === 'not-image') {
    throw fieldError([...where, 'data'], 'The image data could not be read as an image');
  }
  if (image.bytes > IMAGE_MAX_BYTES) {
    throw fieldError(
      where,
      `image exceeds 5 MB maximum: ${image.bytes} bytes > ${IMAGE_MAX_BYTES} bytes`,
    );
  }
  const actual = `image/${image.format}`;
  if (actual !== source.media_type) {
    throw fieldError(
      [...where, 'data'],
      `The image was specified using the ${source.media_type} media type, but the image appears to be a ${actual} image`,
    );
  }
  return {
    text: `image\n${source.media_type}\n${source.data}`,
    tokens: imageTokens(image.width, image.height),
    side: {
      path: [...where, 'data'],
      block: path.filter((segment) => segment !== 'tool_result').join('.'),
      side: Math.max(image.width, image.height),
      refuse: block.transformations?.oversized_image === 'error',
    },
  };
}

/** The image limits that depend on how many images the request holds. */
export function checkImageSides(images: number, sides: readonly ImageSide[]): void {
  if (images > MAX_IMAGES) {
    throw fieldError(['messages'], `Too many images: ${images} > ${MAX_IMAGES}`);
  }
  const many = images > MANY_IMAGES;
  const max = many ? MANY_IMAGES_MAX_SIDE : IMAGE_MAX_SIDE;
  // An image over the limit is scaled down to fit (its tokens are the scaled image's), unless
  // it asks for an error: then every such image is named.
  const over = sides.filter((s) => s.side > max && s.refuse);
  const [first] = over;
  if (first) {
    const message = `At least one of the image dimensions exceed max allowed size${many ? ' for many-image requests' : ''}: ${max} pixels`;
    throw new GatewayError(400, message, {
      issue: { path: first.path, kind: 'value', problem: message },
      extra: {
        details: {
          error_code: 'image_dimensions_too_large',
          max_side_length_pixels: max,
          paths: over.map((s) => s.block),
        },
      },
    });
  }
}
