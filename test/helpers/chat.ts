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
