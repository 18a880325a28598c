/**
 * finishStep-5.lua takes a snapshot's artifacts (or the one artifact an update adds) inside the delegation's record
 * text the worker built (compacted-record-text.ts `withArtifactsText`), where it used to read them into the record
 * from its arguments with lua/includes/compaction.lua `withArtifacts`. The two texts are the same bytes: random
 * records and artifact lists (unicode and escaped ids, duplicates, JSON and non-JSON meta and parts, '{}' records,
 * an empty list), built by the worker and by the Lua that finishStep ran before, on a real Redis.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withArtifactsText } from '../../packages/shared/src/journal/compacted-record-text.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);

/** compaction.lua's functions, then the argument reading finishStep-5.lua did before the worker built the text. */
const LUA = `${readFileSync(new URL('../../packages/shared/src/journal/lua/includes/compaction.lua', import.meta.url), 'utf8')}
local fields = {}
for i = 0, tonumber(ARGV[3]) - 1 do
  local a = 4 + i * 3
  fields['meta:' .. ARGV[a]] = ARGV[a + 1]
  fields['parts:' .. ARGV[a]] = ARGV[a + 2]
  fields['order:' .. ARGV[a]] = ARGV[2] == 'add' and '1' or tostring(i)
end
return withArtifacts(ARGV[1], { names = { artifacts = 'art' } }, fields)`;

const unicode = fc.string({ unit: 'grapheme', maxLength: 8 });
const awkward = fc.constantFrom('', '0', 'a/b', 'tab\there', 'nul\u0000', 'del\u007f', 'back\\slash', 'quote"d', 'é€😀', '\uffff', 'Z', 'a', '{"=":"="}', '[1,"x"]', '{', '[');
const jsonText = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value));
const artifact = fc.record({ artifactId: fc.oneof(unicode, awkward), meta: fc.oneof(jsonText, awkward), parts: fc.oneof(fc.constant('[]'), jsonText, awkward) });

describe('the artifacts in a one-step finish record (real Redis)', () => {
  it('withArtifactsText is byte for byte what withArtifacts built in Lua from the same artifacts (property)', async () => {
    const sha = String(await redis().script('LOAD', LUA));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('{}', '{"v":1}', '{"state":"COMPLETED","msg":"é/\\\\"}'), fc.array(artifact, { maxLength: 4 }), fc.boolean(), async (record, list, adds) => {
        const artifacts = adds ? list.slice(0, 1) : list;
        const args = [record, adds ? 'add' : 'given', String(artifacts.length), ...artifacts.flatMap(({ artifactId, meta, parts }) => [artifactId, meta, parts])];
        const lua = (await redis().callBuffer('EVALSHA', sha, 0, ...args)) as Buffer;
        expect(Buffer.from(withArtifactsText(record, artifacts, adds), 'utf8').equals(lua)).toBe(true);
      }),
      { numRuns: 300, examples: [['{}', [], false], ['{"v":1}', [{ artifactId: 'b', meta: '{}', parts: '[]' }, { artifactId: 'a', meta: 'x', parts: 'y' }, { artifactId: 'b', meta: '[1]', parts: '{' }], false], ['{"v":1}', [{ artifactId: 'é', meta: '{}', parts: '[]' }], true]] },
    );
  });
});
