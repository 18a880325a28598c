// A byte relay 127.0.0.1:<port> → 127.0.0.1:<target> in its own process (so a busy test process does not
// slow replication down), for test/harness/sentinel.ts. IPC: {hold: boolean} keeps back (or releases)
// the target → client direction; {cut: true} drops what is held and closes every connection.
// Reports {listening: port} once bound.
import { createServer, connect } from 'node:net';

const target = Number(process.argv[2]);
const pairs = new Set();
let holding = false;
const server = createServer((client) => {
  const upstream = connect(target, '127.0.0.1');
  const pair = { client, upstream, held: [] };
  pairs.add(pair);
  client.on('data', (chunk) => upstream.write(chunk));
  upstream.on('data', (chunk) => (holding ? pair.held.push(chunk) : client.write(chunk)));
  const end = () => {
    pairs.delete(pair);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', end).on('close', end);
  upstream.on('error', end).on('close', end);
});
process.on('message', (message) => {
  if (typeof message.hold === 'boolean') {
    holding = message.hold;
    if (!holding) for (const pair of pairs) for (const chunk of pair.held.splice(0)) pair.client.write(chunk);
  }
  if (message.cut) {
    for (const pair of pairs) {
      pair.held.length = 0;
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }
  process.send?.({ done: message.id });
});
process.on('disconnect', () => process.exit(0));
server.listen(0, '127.0.0.1', () => process.send?.({ listening: server.address().port }));
