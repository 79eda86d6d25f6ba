import { GatewayError } from '../platform/errors.js';
import { FixtureError, type Fixtures } from '../text/fixtures.js';
import { type ControlApp, type ControlOptions, errors } from './context.js';
import { FixturesViewSchema } from './schemas.js';

const fixturesView = (fixtures: Fixtures) => ({
  rules: fixtures.rules,
  blocked_terms: fixtures.blockedTerms,
});

/** The scripted replies of FIXTURES_DIR: see them, read them again (docs/stubs.md "Scripted replies"). */
export function fixtureRoutes(
  app: ControlApp,
  { text, fixturesReloaded }: Pick<ControlOptions, 'text' | 'fixturesReloaded'>,
): void {
  app.get(
    '/fixtures',
    {
      schema: {
        summary: 'Active scripted-reply rules (first match wins) and blocked terms',
        response: { 200: FixturesViewSchema, ...errors },
      },
    },
    async () => fixturesView(text.fixtures()),
  );

  app.post(
    '/fixtures/reload',
    {
      schema: {
        summary: 'Read FIXTURES_DIR again (on an error the active fixtures stay)',
        response: { 200: FixturesViewSchema, ...errors },
      },
    },
    async () => {
      try {
        const reloaded = await text.reloadFixtures();
        await fixturesReloaded?.();
        return fixturesView(reloaded);
      } catch (err) {
        if (err instanceof FixtureError) throw new GatewayError(400, err.message);
        throw err;
      }
    },
  );
}
