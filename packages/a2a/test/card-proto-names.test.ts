/**
 * A card printed with ProtoJSON proto field names (`supported_interfaces`, `protocol_binding`, ...) reads as the same
 * card under its JSON names (proto3 JSON mapping: parsers accept either spelling; spec §5.7). Attack 27: before, such a
 * card was refused with NO_USABLE_INTERFACE.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeAgentCard } from '../src/card.ts';

const jsonCard = (url: string, binding: string, version: string, streaming: boolean, push: boolean) => ({
  name: 'Agent',
  description: 'd',
  version: '1.0.0',
  supportedInterfaces: [{ url, protocolBinding: binding, tenant: '', protocolVersion: version }],
  capabilities: { streaming, pushNotifications: push },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }],
});

/** `value` with every key of the card, its interfaces and capabilities spelled by its proto name where `spell` says so. */
function protoSpelled(value: unknown, spell: (key: string) => boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => protoSpelled(item, spell));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => [spell(key) ? key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`) : key, protoSpelled(member, spell)]),
  );
}

describe('a card spelled with proto field names', () => {
  it('the attack-27 card (supported_interfaces, protocol_binding, protocol_version, push_notifications) is used', () => {
    const card = protoSpelled(jsonCard('http://127.0.0.1:1/a2a/jsonrpc', 'JSONRPC', '1.0', false, false), () => true);
    expect(normalizeAgentCard(card).interfaces).toEqual([{ url: 'http://127.0.0.1:1/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  });

  it('a key spelled both ways: the JSON name wins', () => {
    const card = { ...jsonCard('http://127.0.0.1:1/json', 'JSONRPC', '1.0', true, false), supported_interfaces: [{ url: 'http://127.0.0.1:2/proto', protocol_binding: 'HTTP+JSON', protocol_version: '1.0' }] };
    expect(normalizeAgentCard(card).interfaces.map((entry) => entry.url)).toEqual(['http://127.0.0.1:1/json']);
  });

  it('property: any mix of proto and JSON names normalizes to the card the JSON names give', () => {
    const keys = ['supportedInterfaces', 'protocolBinding', 'protocolVersion', 'pushNotifications', 'defaultInputModes', 'defaultOutputModes'];
    fc.assert(
      fc.property(
        fc.constantFrom('http://127.0.0.1:9/a', 'https://agent.example/rpc'),
        fc.constantFrom('JSONRPC', 'HTTP+JSON', 'GRPC'),
        fc.constantFrom('1.0', '0.3', '1'),
        fc.boolean(),
        fc.boolean(),
        fc.subarray(keys),
        (url, binding, version, streaming, push, spelled) => {
          const card = jsonCard(url, binding, version, streaming, push);
          expect(normalizeAgentCard(protoSpelled(card, (key) => spelled.includes(key)))).toEqual(normalizeAgentCard(card));
        },
      ),
      { examples: [['http://127.0.0.1:9/a', 'JSONRPC', '1.0', true, true, keys], ['https://agent.example/rpc', 'GRPC', '0.3', false, true, ['supportedInterfaces']], ['http://127.0.0.1:9/a', 'HTTP+JSON', '1', true, false, ['protocolBinding', 'pushNotifications']]] },
    );
  });
});
