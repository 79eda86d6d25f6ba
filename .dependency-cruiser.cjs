/**
 * The layers of src/ (issue 41), checked in `npm test`. Type-only imports count too.
 * @see https://github.com/sverweij/dependency-cruiser/blob/main/doc/rules-reference.md
 */
const features = '^src/(harness|state|record|control)/';
const groups = '^src/(chat|messages|video)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import circles anywhere in src/, type-only imports included.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'platform-imports-no-feature-or-group',
      severity: 'error',
      comment: 'platform/ is plumbing: it knows no harness feature and no API group.',
      from: { path: '^src/platform/' },
      to: { path: [features, groups, '^src/text/'] },
    },
    {
      name: 'text-imports-no-group',
      severity: 'error',
      comment: 'text/ is what chat and messages share: it knows neither of them.',
      from: { path: '^src/text/' },
      to: { path: groups },
    },
    {
      name: 'record-imports-no-group',
      severity: 'error',
      comment: 'record/ is a feature: a group hands it what it needs.',
      from: { path: '^src/record/' },
      to: { path: groups },
    },
    {
      name: 'groups-do-not-import-each-other',
      severity: 'error',
      comment: 'chat/, messages/ and video/ are rooms side by side.',
      from: { path: '^src/(chat|messages|video)/' },
      to: { path: groups, pathNot: '^src/$1/' },
    },
    {
      name: 'harness-imports-no-floor-above',
      severity: 'error',
      comment: 'harness/ builds on platform/ (and the rule book in state/), nothing above it.',
      from: { path: '^src/harness/' },
      to: { path: ['^src/(text|record|control)/', groups] },
    },
    {
      name: 'text-imports-no-floor-above',
      severity: 'error',
      comment:
        'text/ builds on harness/ and platform/: it knows no recording and no control route.',
      from: { path: '^src/text/' },
      to: { path: '^src/(record|control)/' },
    },
    {
      name: 'record-imports-no-control',
      severity: 'error',
      comment: 'record/ knows no control route.',
      from: { path: '^src/record/' },
      to: { path: '^src/control/' },
    },
    {
      name: 'groups-import-no-control-or-record',
      severity: 'error',
      comment: 'A group knows neither the control surface nor the recorder (app.ts wires them).',
      from: { path: groups },
      to: { path: '^src/(control|record)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
