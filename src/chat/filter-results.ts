import type { BlockedTerm } from '../text/fixtures.js';
import type { ChoiceFilterResults, PromptFilterResults } from './schemas.js';

/**
 * What the content filter found, as Azure's chat answers carry it (`content_filter_results`).
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */

const SAFE = { filtered: false, severity: 'safe' } as const;
const CLEAR = { filtered: false, detected: false } as const;

export function categoryResults(term?: BlockedTerm) {
  const results = { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE } as Record<
    'hate' | 'self_harm' | 'sexual' | 'violence',
    { filtered: boolean; severity: string }
  >;
  if (term) results[term.category] = { filtered: true, severity: term.severity ?? 'high' };
  return results;
}

export const choiceFilterResults = (term?: BlockedTerm): ChoiceFilterResults => ({
  ...categoryResults(term),
  protected_material_code: CLEAR,
  protected_material_text: CLEAR,
});

export const promptFilterResults = (term?: BlockedTerm): PromptFilterResults[] => {
  const { hate, self_harm, sexual, violence } = categoryResults(term);
  return [
    {
      prompt_index: 0,
      content_filter_results: { hate, jailbreak: CLEAR, self_harm, sexual, violence },
    },
  ];
};
