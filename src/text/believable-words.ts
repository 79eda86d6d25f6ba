/**
 * The words believable.ts makes values of: the kinds of field a name tells (by its words), and
 * the names, places, words and sentences a field of each kind is given.
 */

export type Kind =
  | 'email'
  | 'url'
  | 'phone'
  | 'id'
  | 'date'
  | 'time'
  | 'place'
  | 'person'
  | 'handle'
  | 'title'
  | 'organization'
  | 'query'
  | 'prose'
  | 'language'
  | 'currency'
  | 'color'
  | 'unit'
  | 'file'
  | 'word';

const KIND_WORDS: Array<[Kind, string[]]> = [
  ['email', ['email', 'mail']],
  ['url', ['url', 'uri', 'link', 'website', 'href', 'homepage', 'endpoint']],
  ['phone', ['phone', 'mobile', 'tel', 'telephone']],
  ['id', ['id', 'ids', 'uuid', 'guid', 'key', 'sku', 'code', 'ref', 'reference', 'slug']],
  [
    'date',
    [
      'date',
      'day',
      'birthday',
      'birthdate',
      'deadline',
      'dob',
      'due',
      'start',
      'end',
      'checkin',
      'checkout',
    ],
  ],
  ['time', ['time', 'hour', 'clock']],
  ['file', ['file', 'filename', 'path', 'filepath']],
  ['handle', ['username', 'login', 'handle', 'nickname']],
  [
    'place',
    [
      'city',
      'location',
      'place',
      'country',
      'destination',
      'origin',
      'address',
      'region',
      'state',
      'town',
      'where',
      'venue',
      'airport',
      'capital',
      'province',
      'county',
      'area',
    ],
  ],
  [
    'organization',
    [
      'company',
      'organization',
      'organisation',
      'org',
      'employer',
      'brand',
      'team',
      'vendor',
      'store',
      'shop',
      'restaurant',
      'hotel',
      'airline',
    ],
  ],
  [
    'person',
    [
      'name',
      'person',
      'author',
      'customer',
      'owner',
      'contact',
      'recipient',
      'assignee',
      'who',
      'sender',
      'attendee',
      'guest',
      'passenger',
      'patient',
      'employee',
      'manager',
      'user',
      'first',
      'last',
      'surname',
      'artist',
      'director',
    ],
  ],
  [
    'title',
    [
      'title',
      'subject',
      'topic',
      'headline',
      'book',
      'movie',
      'film',
      'song',
      'album',
      'product',
      'item',
      'event',
      'label',
      'category',
      'genre',
      'dish',
    ],
  ],
  [
    'query',
    [
      'query',
      'question',
      'search',
      'prompt',
      'q',
      'keywords',
      'keyword',
      'term',
      'terms',
      'input',
      'request',
      'instruction',
      'task',
    ],
  ],
  [
    'prose',
    [
      'description',
      'summary',
      'reason',
      'explanation',
      'content',
      'message',
      'body',
      'comment',
      'note',
      'notes',
      'answer',
      'reply',
      'details',
      'text',
      'feedback',
      'review',
      'bio',
      'analysis',
      'conclusion',
      'response',
      'output',
      'justification',
      'reasoning',
      'instructions',
      'story',
      'plot',
      'caption',
    ],
  ],
  ['language', ['language', 'lang', 'locale']],
  ['currency', ['currency']],
  ['color', ['color', 'colour']],
  ['unit', ['unit', 'units']],
];

/** Each word's kind (the first list that names it). */
const KIND_OF_WORD = new Map<string, Kind>();
for (const [kind, names] of KIND_WORDS) {
  for (const name of names) if (!KIND_OF_WORD.has(name)) KIND_OF_WORD.set(name, kind);
}
/** Words that name a field's role only when no other word does: `city_name` is a city. */
const GENERIC = new Set(['name', 'text', 'title', 'label', 'value']);

/** A field's kind: its last telling word decides (`start_time` is a time, `user_id` an id). */
export function kindOf(words: string[]): Kind {
  let generic: Kind | undefined;
  for (let i = words.length - 1; i >= 0; i--) {
    const word = words[i] as string;
    const kind = KIND_OF_WORD.get(word);
    if (kind === undefined) continue;
    if (!GENERIC.has(word)) return kind;
    generic ??= kind;
  }
  return generic ?? 'word';
}

export const FIRST = [
  'Alice',
  'Bob',
  'Carol',
  'David',
  'Emma',
  'Frank',
  'Grace',
  'Henry',
  'Iris',
  'James',
  'Laura',
  'Maya',
];
export const LAST = [
  'Smith',
  'Johnson',
  'Garcia',
  'Chen',
  'Müller',
  'Rossi',
  'Kim',
  'Dubois',
  'Novak',
  'Silva',
];
export const CITIES = [
  'Paris',
  'London',
  'Tokyo',
  'Berlin',
  'Madrid',
  'Toronto',
  'Sydney',
  'Lisbon',
  'Seoul',
  'Chicago',
];
export const COUNTRIES = [
  'France',
  'Japan',
  'Germany',
  'Canada',
  'Brazil',
  'Spain',
  'Italy',
  'Australia',
];
export const COMPANIES = [
  'Acme Corp',
  'Globex',
  'Initech',
  'Northwind Traders',
  'Contoso',
  'Umbrella Labs',
];
export const TITLES = [
  'Quarterly Report',
  'Project Kickoff',
  'Weekly Summary',
  'Product Launch',
  'Team Offsite',
];
export const WORDS = [
  'alpha',
  'harbor',
  'maple',
  'summit',
  'river',
  'orbit',
  'cedar',
  'beacon',
  'meadow',
  'lantern',
];
export const SENTENCES = [
  'This is a short summary of the request.',
  'The result looks good and needs no further action.',
  'Everything was processed as expected.',
  'The details are listed above in order.',
  'A clear and concise answer to the question.',
];
export const LANGUAGES = ['English', 'French', 'Spanish', 'German', 'Japanese'];
export const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY'];
export const COLORS = ['blue', 'green', 'red', 'orange', 'purple'];
export const UNITS = ['celsius', 'fahrenheit', 'metric', 'imperial'];
