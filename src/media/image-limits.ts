/**
 * What each provider's form takes of an image, as its API documents it: the longest side it uses
 * before scaling down itself, the encoded size it accepts and the formats. An image within these,
 * in a format the provider takes, is sent byte for byte; any other is converted (convert.ts).
 */
import type { MediaTarget } from './capabilities.ts';

export interface ImageLimits {
  /** Longest side in pixels. */
  maxSide: number;
  /** Encoded bytes at most. */
  maxBytes: number;
  /** Image types sent as they are (animated ones are converted to their first frame). */
  types: ReadonlySet<string>;
}

const MB5 = 5 * 1024 ** 2;
const COMMON: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** OpenAI's high-detail images are fitted in 2,048 px; the OpenAI-shaped providers share that form. */
const OPENAI: ImageLimits = { maxSide: 2048, maxBytes: MB5, types: COMMON };
/** Claude resizes any image with a side over 1,568 px (Anthropic's API, Bedrock and Vertex AI alike). */
const CLAUDE: ImageLimits = { maxSide: 1568, maxBytes: MB5, types: COMMON };
/** Gemini takes PNG, JPEG, WebP, HEIC and HEIF (no GIF), fitted in 3,072 px. */
const GEMINI: ImageLimits = {
  maxSide: 3072,
  maxBytes: MB5,
  types: new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']),
};

/** The image limits of the target's provider and model. */
export function imageLimitsOf(target: Pick<MediaTarget, 'provider' | 'model'>): ImageLimits {
  const model = target.model.toLowerCase();
  if (target.provider === 'anthropic') return CLAUDE;
  if ((target.provider === 'bedrock' || target.provider === 'vertexai') && model.includes('claude')) return CLAUDE;
  if (target.provider === 'vertexai') return GEMINI;
  return OPENAI;
}

/** The name of a conversion's result, part of its cache key: the same limits give the same bytes. */
export const formName = (l: ImageLimits) => `jpeg85-${l.maxSide}px-${l.maxBytes}b`;
