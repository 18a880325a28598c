/**
 * Appends one section to bench/results.md: date, machine (node:os), the
 * versions that matter (node, redis-server, bullmq, @a2a-js/sdk, ioredis),
 * the exact command (with the BENCH_*, PEERS_* and DA2A_* settings), and each benchmark's figures as a table.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, release, totalmem, type } from 'node:os';
import { fileURLToPath } from 'node:url';
import { resolveRedisServerBinary } from '../test/harness/redis.ts';
import type { BenchResult } from './common.ts';

const ROOT = new URL('../', import.meta.url);
export const RESULTS_FILE = fileURLToPath(new URL('bench/results.md', ROOT));

const packageVersion = (name: string): string => {
  try {
    return (JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, ROOT), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
};

/** Machine and versions, as one line each. */
export function environment(): string[] {
  const cpu = cpus();
  let redis = 'unknown';
  try {
    redis = /v=(\S+)/.exec(execFileSync(resolveRedisServerBinary(), ['--version'], { encoding: 'utf8' }))?.[1] ?? redis;
  } catch {
    // reported as unknown
  }
  let commit = 'unknown';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', cwd: fileURLToPath(ROOT) }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages'], { encoding: 'utf8', cwd: fileURLToPath(ROOT) }).trim() !== '';
    commit = `${head}${dirty ? ' + uncommitted changes in packages/' : ''}`;
  } catch {
    // not a git checkout
  }
  return [
    `Code: ${commit}`,
    `Machine: ${type()} ${release()} ${arch()}, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; load average at start ${loadavg().map((load) => load.toFixed(2)).join(' ')}`,
    `Versions: node ${process.version}, redis-server ${redis}, bullmq ${packageVersion('bullmq')}, @a2a-js/sdk ${packageVersion('@a2a-js/sdk')}, ioredis ${packageVersion('ioredis')}`,
  ];
}

/** The command as the user typed it (`pnpm bench …` when run through the script). */
export function exactCommand(args: readonly string[]): string {
  const settings = Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_') || name.startsWith('PEERS_') || name.startsWith('DA2A_'))
    .map(([name, value]) => `${name}=${value} `)
    .join('');
  const base = process.env.npm_lifecycle_event === 'bench' ? 'pnpm bench' : 'tsx bench/run.ts';
  return `${settings}${base}${args.length ? ` ${args.join(' ')}` : ''}`;
}

const cell = (text: string | number) => String(text).replaceAll('|', '\\|');

/** Markdown for one run: header lines, then one table per benchmark. */
export function formatSection(results: readonly BenchResult[], options: { command: string; environment: string[]; wallSeconds: number; startedAt: Date }): string {
  const lines = [`## ${options.startedAt.toISOString()}`, '', ...options.environment.map((line) => `- ${line}`), `- Command: \`${options.command}\``, `- Total wall time: ${options.wallSeconds.toFixed(1)} s`, ''];
  for (const result of results) lines.push(formatResult(result), '');
  return lines.join('\n');
}

/** One benchmark: a heading, its figures as a table (or its own tables), its notes. */
export function formatResult(result: BenchResult): string {
  const lines = [`### ${result.name}: ${result.title}`, ''];
  if (result.tables) lines.push(...result.tables.flatMap((table) => [table, '']));
  else {
    lines.push('| metric | value | unit |', '| --- | ---: | --- |');
    for (const figure of result.figures) lines.push(`| ${cell(figure.metric)} | ${cell(figure.value)} | ${cell(figure.unit)} |`);
  }
  lines.push('', ...result.notes.map((note) => `- ${note}`));
  return lines.join('\n');
}

export function appendResults(section: string): void {
  if (!existsSync(RESULTS_FILE)) {
    writeFileSync(RESULTS_FILE, '# durable-a2a benchmark results\n\nAppended by `pnpm bench` (bench/run.ts); newest last. Ratios are against a baseline measured in the same run.\n\n');
  }
  appendFileSync(RESULTS_FILE, `${section}\n`);
}
