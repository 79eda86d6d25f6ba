import { readFileSync } from 'node:fs';

/** Real image files made with ffmpeg, as the Base64 a client would send. */
const read = (name: string) =>
  readFileSync(new URL(`../fixtures/images/${name}`, import.meta.url)).toString('base64');

export const IMAGES = {
  png320: read('ok-320.png'),
  jpeg640x360: read('ok-640x360.jpg'),
  pngTooSmall: read('small-200.png'),
  jpegTooWide: read('wide-1000x300.jpg'),
  gif: read('not-allowed.gif'),
  webpLossy: read('lossy-413x211.webp'),
  webpLossless: read('lossless-77x55.webp'),
  webpAlpha: read('alpha-501x33.webp'),
};
