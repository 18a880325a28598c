/**
 * The example of packages/testing/README.md runs as written (its own redis-server, agent, fleet and producer): the
 * question is answered, the delegation completes, and its counts hold (a reply is a SendMessage too: 2 in all, one task).
 */
import { expect, it } from 'vitest';
import { runSnippet, snippetOf } from '../harness/doc-snippet.ts';

it('packages/testing/README.md: the example completes and its assertions hold', async () => {
  const { code, output } = await runSnippet(snippetOf('packages/testing/README.md'));
  expect(output).not.toMatch(/AssertionError/);
  expect(code).toBe(0);
}, 60_000);
