/** The content-filter results every unfiltered chat completion carries (Azure style). */
export const SAFE = { filtered: false, severity: 'safe' };
export const CLEAR = { filtered: false, detected: false };

export const CHOICE_FILTERS = {
  hate: SAFE,
  self_harm: SAFE,
  sexual: SAFE,
  violence: SAFE,
  protected_material_code: CLEAR,
  protected_material_text: CLEAR,
};

export const PROMPT_FILTERS = [
  {
    prompt_index: 0,
    content_filter_results: {
      hate: SAFE,
      jailbreak: CLEAR,
      self_harm: SAFE,
      sexual: SAFE,
      violence: SAFE,
    },
  },
];

/** The Azure-style first frame of every chat stream: prompt filter results only. */
export const FIRST_FRAME = {
  choices: [],
  created: 0,
  id: '',
  model: '',
  object: '',
  prompt_filter_results: PROMPT_FILTERS,
};

/** A chunk maker for choice 0 of a stream whose chunks share `head` (and `extra`, e.g. usage). */
export const chunkOf =
  (head: object, extra: object = {}) =>
  (delta: object, finish: string | null = null, filters: object = {}) => ({
    ...head,
    choices: [
      { index: 0, delta, logprobs: null, finish_reason: finish, content_filter_results: filters },
    ],
    ...extra,
  });

/** The frames of streamed tool calls: per call its opening, then its arguments 4 tokens a piece. */
export function toolCallFrames(
  calls: ReadonlyArray<{ id: unknown; name: string; arguments: string }>,
  chunk: (delta: object) => object,
  split: (text: string, perPiece: number) => string[],
) {
  return calls.flatMap((call, k) => [
    chunk({
      tool_calls: [
        { index: k, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
      ],
    }),
    ...split(call.arguments, 4).map((piece) =>
      chunk({ tool_calls: [{ index: k, function: { arguments: piece } }] }),
    ),
  ]);
}
