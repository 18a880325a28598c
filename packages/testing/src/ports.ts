/**
 * Port and socket helpers shared by the harness servers.
 */
import { createServer, type Server, type Socket } from 'node:net';

/**
 * Finds a TCP port on 127.0.0.1 that is free right now, by listening on port 0
 * and closing again. Another process may take it before the caller binds it, so
 * callers that spawn a child on it should retry on "address in use".
 */
export async function findFreePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') {
    throw new Error('findFreePort: listening on port 0 gave no TCP address');
  }
  return address.port;
}

/**
 * Remembers every socket a server accepts, so that `destroyAll` can cut them,
 * keep-alive connections included (`server.close()` alone waits for them).
 */
export function trackSockets(server: Server): { destroyAll: () => void } {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    destroyAll: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
  };
}

/** Resolves once `server` listens on `port` (0 = any) at 127.0.0.1; returns the bound port. */
export async function listenOnLoopback(server: Server, port = 0, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('listenOnLoopback: server has no TCP address');
  }
  return address.port;
}

/** Closes `server` and resolves when it has stopped listening; open sockets should be destroyed first. */
export async function closeServer(server: Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
  });
}
