/**
 * The travel cast for one test file (vitest hooks): started before its tests, closed after. Kept apart
 * from travel.ts, which `pnpm demo` imports without vitest.
 */
import { afterAll, beforeAll } from 'vitest';
import { startTravelCast, type TravelCast } from './travel.ts';

/** Registers the hooks; the returned function reads the running cast (inside tests and hooks only). */
export function useTravelCast(): () => TravelCast {
  let cast: TravelCast | undefined;
  beforeAll(async () => {
    cast = await startTravelCast();
  });
  afterAll(async () => {
    await cast?.close();
  });
  return () => {
    if (!cast) throw new Error('the travel cast runs only inside tests (useTravelCast)');
    return cast;
  };
}
