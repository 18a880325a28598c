/**
 * Benchmark child processes: the parent forks a bench/processes/*.ts entry
 * (the durable-a2a packages from source through tsx, as `pnpm bench` runs, or
 * from their build: the entry with plain node, whose type stripping runs the
 * bench's own .ts, the packages resolved to `dist/`), waits for its ready message,
 * then calls named functions over IPC (`{ id, call, argument }` →
 * `{ id, result | error }`). Used to keep the agent and each measured side
 * in a process of its own, so that process CPU time is theirs alone.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SOURCE_EXEC_ARGV = ['--conditions=@durable-a2a/source', '--import', 'tsx'];

/** How `spawnBenchChild` starts its child. */
export interface BenchChildOptions {
  /**
   * In a process group of its own, for a child that is SIGSTOPped while idle (bench/peers.ts): a stopped process in
   * the caller's group gets SIGHUP when that group is orphaned (the shell that started the run exits). A detached
   * child still quits when this process goes away (its IPC channel closes). Default false.
   */
  detached?: boolean;
  /**
   * The durable-a2a packages from their build (`dist/`, `pnpm build` first) with plain node and no tsx, as a deployed
   * service loads them: Node's type stripping runs the bench entry itself. Default false: the packages' sources
   * through tsx (`--conditions=@durable-a2a/source`).
   */
  built?: boolean;
}

type Handler = (argument: unknown) => Promise<unknown>;

interface CallMessage {
  id: number;
  call: string;
  argument?: unknown;
}

interface ReplyMessage {
  id?: number;
  ready?: unknown;
  result?: unknown;
  error?: string;
}

/** Child side: reports `ready`, then serves calls until `stop` (or the parent goes away). */
export function serveCalls(ready: unknown, handlers: Record<string, Handler>, stop: () => Promise<void>): void {
  const send = (message: ReplyMessage) => process.send?.(message);
  const quit = async () => {
    await stop().catch(() => undefined);
    process.exit(0);
  };
  process.on('disconnect', () => void quit());
  process.on('message', (message: CallMessage) => {
    if (message.call === 'stop') {
      send({ id: message.id, result: null });
      void quit();
      return;
    }
    const handler = handlers[message.call];
    if (!handler) return send({ id: message.id, error: `no such call: ${message.call}` });
    handler(message.argument).then(
      (result) => send({ id: message.id, result }),
      (error: unknown) => send({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  send({ ready });
}

/** Parent side of one bench child. */
export interface BenchChild<Ready> {
  readonly child: ChildProcess;
  readonly ready: Promise<Ready>;
  call<T>(name: string, argument?: unknown): Promise<T>;
  /** Asks the child to stop; SIGKILLs it after 10 s. */
  stop(): Promise<void>;
}

/**
 * Forks `bench/processes/<entry>.ts` with `environment` added to this process's env and `execArgv` (Node options)
 * after the loader's; `options` say how (detached, built; both default false).
 */
export function spawnBenchChild<Ready>(entry: string, environment: Record<string, string> = {}, execArgv: string[] = [], options: BenchChildOptions = {}): BenchChild<Ready> {
  const child = fork(fileURLToPath(new URL(`./${entry}.ts`, import.meta.url)), [], {
    execArgv: [...(options.built ? [] : SOURCE_EXEC_ARGV), ...execArgv],
    env: { ...process.env, ...environment },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: options.detached ?? false,
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let exitReason = '';
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitReason = ` (code ${code}, signal ${signal})`;
      resolve();
    }),
  );
  let nextId = 1;
  const ready = new Promise<Ready>((resolve, reject) => {
    child.on('message', (message: ReplyMessage) => {
      if ('ready' in message) return resolve(message.ready as Ready);
      const waiter = pending.get(message.id ?? -1);
      if (!waiter) return;
      pending.delete(message.id!);
      if (message.error !== undefined) waiter.reject(new Error(`${entry}: ${message.error}`));
      else waiter.resolve(message.result);
    });
    void exited.then(() => {
      reject(new Error(`${entry} exited before ready${exitReason}`));
      for (const waiter of pending.values()) waiter.reject(new Error(`${entry} exited${exitReason}`));
      pending.clear();
    });
  });
  ready.catch(() => undefined);
  return {
    child,
    ready,
    call<T>(name: string, argument?: unknown) {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        // A child that is gone closes the channel: the call fails instead of an unhandled 'error' event.
        child.send({ id, call: name, argument } satisfies CallMessage, (error) => {
          if (!error) return;
          pending.delete(id);
          reject(new Error(`${entry}: ${name}: ${error.message}${exitReason}`));
        });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ id: 0, call: 'stop' }, () => undefined);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
