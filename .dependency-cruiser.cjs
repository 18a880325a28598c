/** Modules that perform I/O (Redis, BullMQ, HTTP, gRPC, logs, metrics, the journal class, the transports), sources or builds. */
const IO_MODULES =
  'node_modules/(ioredis|bullmq|undici|pino|prom-client|@grpc/grpc-js)/|^packages/shared/(src|dist)/(journal/(journal|core|scripts|unfinished-index|workflows|delegations|status|replies|coordination)|registry|redis)\\.(ts|js)$|^packages/a2a/(src|dist)/((http|jsonrpc|rest|client|stream|sse|card|address-policy)\\.(ts|js)$|grpc/|v03/(jsonrpc|rest)\\.)';

/**
 * Structure rules, checked by `pnpm lint:structure` (and .ci/run). Each rule
 * keeps one property of the intended shape (docs/concepts.md "How a delegation flows").
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'queues-never-import-queues',
      comment: 'A queue processor is thin (parse job → delegation/ or workflow/ → return) and imports no other queue module.',
      severity: 'error',
      from: { path: '^packages/workers/src/queues/([^/]+)\\.ts$' },
      to: { path: '^packages/workers/src/queues/', pathNot: '^packages/workers/src/queues/$1\\.ts$' },
    },
    {
      name: 'only-fleet-imports-queues',
      comment: 'Queue modules are wired by fleet.ts only; the state machine never calls a processor.',
      severity: 'error',
      from: { path: '^packages/workers/src/', pathNot: '^packages/workers/src/(fleet|index)\\.ts$|^packages/workers/src/queues/' },
      to: { path: '^packages/workers/src/queues/' },
    },
    {
      name: 'decide-is-pure',
      comment: 'The decider (journal in, decision out) reaches no I/O: no Redis, BullMQ, HTTP, node built-ins, journal class or transports.',
      severity: 'error',
      from: { path: '^packages/shared/src/(decide|decide-[a-z]+|attempt-message)\\.ts$' },
      to: {
        reachable: true,
        path: IO_MODULES,
      },
    },
    {
      name: 'decide-imports-no-node-builtins',
      comment: 'The decider uses no node built-in (fs, net, crypto, timers): it is a pure function.',
      severity: 'error',
      from: { path: '^packages/shared/src/(decide|decide-[a-z]+|attempt-message)\\.ts$' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'next-job-guess-is-pure',
      comment: 'Whether a finish asks BullMQ for the next job is a pure rule (next-job-guess.ts): it imports nothing at run time.',
      severity: 'error',
      from: { path: '^packages/workers/src/next-job-guess\\.ts$' },
      to: { dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'delegation-core-is-pure',
      comment: 'The delegation core (observations, table, next, policy, outcomes) performs no I/O: at run time it imports only itself and @durable-a2a/shared/pure (types from anywhere).',
      severity: 'error',
      from: { path: '^packages/workers/src/delegation/core/' },
      to: { pathNot: '^packages/workers/src/delegation/core/|^packages/shared/(src/pure\\.ts|dist/pure\\.js)$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'shared-pure-reaches-no-io',
      comment: '@durable-a2a/shared/pure (what the delegation core imports) reaches no Redis, BullMQ, HTTP, logger, metrics or node built-in.',
      severity: 'error',
      from: { path: '^packages/shared/(src/pure\\.ts|dist/pure\\.js)$' },
      to: {
        reachable: true,
        path: IO_MODULES,
      },
    },
    {
      name: 'delegation-core-imports-no-node-builtins',
      comment: 'The delegation core uses no node built-in (fs, net, crypto, timers): its clock and randomness are injected.',
      severity: 'error',
      from: { path: '^packages/workers/src/delegation/core/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'only-apply-settles-and-parks',
      comment: 'settle and park are next steps of the executor: only delegation/apply.ts performs them.',
      severity: 'error',
      from: { path: '^packages/workers/src/', pathNot: '^packages/workers/src/delegation/apply\\.ts$' },
      to: { path: '^packages/workers/src/delegation/(settle|park)\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-executor-writes',
      comment:
        'delegation/apply.ts asks the table (core/transitions.ts) for a step and performs its journal transitions; nothing else asks it (the workflow decision closes held intents through apply.ts, passed in as a port: CloseHeldIntent).',
      severity: 'error',
      from: { path: '^packages/workers/src/', pathNot: '^packages/workers/src/delegation/(apply\\.ts$|core/)' },
      to: { path: '^packages/workers/src/delegation/core/transitions\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-executor-registers-push',
      comment: 'The push config life cycle (delegation/push-registration.ts) is a side duty of the executor: registered after a step\'s write (apply.ts), deleted when the row settles (settle.ts).',
      severity: 'error',
      from: { path: '^packages/workers/src/', pathNot: '^packages/workers/src/delegation/(apply|settle)\\.ts$' },
      to: { path: '^packages/workers/src/delegation/push-registration\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'io-never-applies',
      comment: 'delegation/io/ talks to agents and returns observations: it never writes the journal, routes, settles or parks, and runs no process machinery.',
      severity: 'error',
      from: { path: '^packages/workers/src/delegation/io/' },
      to: { path: '^packages/workers/src/(delegation/(apply|settle|park|deadline|verifier-check|auth)\\.ts|delegation/runs/|workflow/|queues/)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'producer-never-imports-workers',
      comment: 'The producer (and its HTTP service) imports only shared schemas, queue names and types; never the workers runtime.',
      severity: 'error',
      from: { path: '^packages/producer/' },
      to: { path: '^packages/workers/' },
    },
    {
      name: 'workers-never-import-producer',
      comment: 'Workers never import the producer or its HTTP service.',
      severity: 'error',
      from: { path: '^packages/workers/' },
      to: { path: '^packages/producer/' },
    },
    {
      name: 'shared-imports-no-package',
      comment: 'shared is the bottom layer: it imports neither the producer nor the workers.',
      severity: 'error',
      from: { path: '^packages/shared/' },
      to: { path: '^packages/(producer|workers)/' },
    },
    {
      name: 'nothing-imports-tests',
      comment: 'Product code never imports test code (the demo, examples and benchmarks run the test harness by design).',
      severity: 'error',
      from: { path: '^packages/[^/]+/src/' },
      to: { path: '^test/|^packages/[^/]+/test/' },
    },
    {
      name: 'redis-only-in-journal-and-registry',
      comment:
        'Redis is reached only through the journal (and the agent registry); clients are created in one place per process (redis.ts), the start-up checks read its config and version. The test kit\'s MONITOR (testing/src/monitor.ts) counts commands from outside, for tests and benchmarks.',
      severity: 'error',
      from: {
        path: '^packages/',
        pathNot:
          '^packages/shared/src/(journal/[^/]+|registry|redis|redis-sentinel)\\.ts$|^packages/producer/src/(calls/context|server/routes/ops)\\.ts$|^packages/workers/src/(persistence|redis-version)\\.ts$|^packages/testing/src/monitor\\.ts$|^packages/[^/]+/test/',
      },
      to: { path: 'node_modules/ioredis/' },
    },
    {
      name: 'a2a-stands-alone',
      comment:
        '@durable-a2a/a2a is a client anyone can install alone: it imports no other workspace package and nothing of BullMQ, ioredis, pino or prom-client (its dependencies: undici, eventsource-parser, zod, ipaddr.js, lru-cache, @opentelemetry/api, and grpc-js with protobuf-es behind /grpc).',
      severity: 'error',
      from: { path: '^packages/a2a/' },
      to: { path: '^packages/(?!a2a/)|node_modules/(@durable-a2a|bullmq|bullmq-otel|ioredis|pino|prom-client|@opentelemetry/(?!api/))' },
    },
    {
      name: 'a2a-main-loads-no-grpc',
      comment: 'The main entry of @durable-a2a/a2a never reaches gRPC: a JSON-only user never loads @grpc/grpc-js (gRPC is the /grpc subpath).',
      severity: 'error',
      from: { path: '^packages/a2a/src/(index|pure)\\.ts$' },
      to: { reachable: true, path: '^packages/a2a/src/grpc/|node_modules/(@grpc|@bufbuild)/' },
    },
    {
      name: 'a2a-pure-reaches-no-io',
      comment: '@durable-a2a/a2a/pure (the model the decider and shared/pure import) reaches no HTTP, gRPC or transport.',
      severity: 'error',
      from: { path: '^packages/a2a/(src/pure\\.ts|dist/pure\\.js)$' },
      to: { reachable: true, path: IO_MODULES },
    },
    {
      name: 'no-circular',
      comment: 'No runtime import cycles inside the product packages (type-only imports, erased at compile time, may close a loop).',
      severity: 'error',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['@durable-a2a/source', 'import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
